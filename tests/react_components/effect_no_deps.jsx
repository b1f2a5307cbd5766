import { useEffect, useState } from "react";

export default function App() {
  const [n, setN] = useState(0);
  useEffect(() => {
    setN(n + 1);
  });
  return <p>{n}</p>;
}
