import { render } from "preact";
import "./styles.css";

function App() {
  return <main>Latchkey console</main>;
}

render(<App />, document.getElementById("app")!);
