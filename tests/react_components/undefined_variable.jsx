export default function App() {
  return <p>{message}</p>;
}
