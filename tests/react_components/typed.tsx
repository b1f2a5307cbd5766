import { useRef, useState } from "react";

interface Props {
  label?: string;
}

export default function Field({ label = "Name" }: Props) {
  const input = useRef<HTMLInputElement>(null);
  const [value, setValue] = useState<string>("");
  return (
    <label>
      {label}
      <input ref={input} value={value} onChange={(e) => setValue(e.target.value)} />
    </label>
  );
}
