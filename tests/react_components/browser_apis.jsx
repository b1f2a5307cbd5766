import { useEffect, useRef, useState } from "react";

export default function Chart() {
  const canvas = useRef(null);
  const [users, setUsers] = useState([]);
  useEffect(() => {
    const ctx = canvas.current.getContext("2d");
    ctx.fillStyle = "#08f";
    ctx.fillRect(0, 0, 40, 40);
    fetch("https://example.com/users")
      .then((r) => r.json())
      .then(setUsers)
      .catch(() => setUsers([]));
  }, []);
  return (
    <section>
      <canvas ref={canvas} width={80} height={40} />
      <p>{users.length} users</p>
    </section>
  );
}
