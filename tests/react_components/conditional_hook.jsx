import { useState } from "react";

export default function App({ show }) {
  if (show) {
    const [value] = useState(1);
    return <p>{value}</p>;
  }
  return <p>hidden</p>;
}
