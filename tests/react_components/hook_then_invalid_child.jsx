import { useState } from "react";

export default function Profile() {
  const [user] = useState({ name: "Ada" });
  const title = "Profile";
  return (
    <div>
      <h1>{title}</h1>
      <p>{user}</p>
    </div>
  );
}
