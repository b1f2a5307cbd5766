export default function App() {
  const data = null;
  return <p>{data.title}</p>;
}
