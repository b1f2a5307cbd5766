import { useEffect } from "react";

export default function App() {
  useEffect(() => {
    const spin = () => Promise.resolve().then(spin);
    spin();
  }, []);
  return <p>spinning</p>;
}
