export default function List() {
  const fruits = ["apple", "pear"];
  return (
    <ul>
      {fruits.map((f) => <li>{f}</li>)}
    </ul>
  );
}
