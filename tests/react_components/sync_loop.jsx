export default function App() {
  let i = 0;
  while (i >= 0) {
    i += 1;
  }
  return <p>{i}</p>;
}
