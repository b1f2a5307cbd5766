import { useEffect, useState } from "react";

export default function App() {
  const [n, setN] = useState(0);
  useEffect(() => {
    const id = setInterval(() => setN((v) => v + 1), 0);
    return () => clearInterval(id);
  }, []);
  return <p>Ticks: {n}</p>;
}
