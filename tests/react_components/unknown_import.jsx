import { Camera } from "lucide-react";

export default function App() {
  return (
    <div>
      <Camera size={16} /> Photos
    </div>
  );
}
