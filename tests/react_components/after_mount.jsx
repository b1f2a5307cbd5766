import { useEffect, useState } from "react";

export default function App() {
  const [ready, setReady] = useState(false);
  useEffect(() => {
    setReady(true);
  }, []);
  return <main>{ready ? <h1>Welcome</h1> : null}</main>;
}
