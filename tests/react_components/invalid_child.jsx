function Card() {
  const data = { a: 1 };
  return <div>{data}</div>;
}

export default function App() {
  return (
    <main>
      <Card />
    </main>
  );
}
