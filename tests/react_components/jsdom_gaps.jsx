import { useEffect, useRef, useState } from "react";

export default function Widget() {
  const ref = useRef(null);
  const [notes] = useState(() => structuredClone([{ id: 1, text: "a" }]));
  const [where, setWhere] = useState(null);
  useEffect(() => {
    ref.current.showModal();
    ref.current.animate([{ opacity: 0 }, { opacity: 1 }], 200);
    navigator.geolocation.getCurrentPosition((pos) => setWhere(pos.coords));
  }, []);
  return (
    <dialog ref={ref}>
      {notes.map((n) => <p key={n.id}>{n.text}</p>)}
      <p>{where ? where.latitude : "Locating..."}</p>
    </dialog>
  );
}
