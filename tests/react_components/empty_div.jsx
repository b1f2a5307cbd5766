export default function App() {
  return <div className="container"></div>;
}
