"""Long React components: a page of sections, the paper's code regime (``react:sections=N``).

A prompt names a page and its sections, one line each; a completion is one fenced ``jsx``
block of about 25-60 lines (3 sections: 25-40), a nested element per section with its own
heading, lists, handlers and conditionals::

    prompt:      Page Shop
                 - Fruit: text "Fresh today"; list Apple, Fig; counter "Add"
                 - Deals: toggle "Show" shows "Open late"
    completion:  ```jsx
                 export default function Shop() {
                   const [n1, setN1] = React.useState(0);
                   const [on2, setOn2] = React.useState(false);
                   return <div className="page">
                     <h1>Shop</h1>
                     <section>
                       <h2>Fruit</h2>
                       <p>Fresh today</p>
                       <ul>
                         {["Apple", "Fig"].map((x) => <li key={x}>{x}</li>)}
                       </ul>
                       <button onClick={() => setN1(n1 + 1)}>Add {n1}</button>
                     </section>
                     <section>
                       <h2>Deals</h2>
                       <button onClick={() => setOn2(!on2)}>Show</button>
                       {on2 && <p>Open late</p>}
                     </section>
                   </div>;
                 }
                 ```

Each section draws its parts as the flat component does (``text``, ``list``, ``counter``,
``toggle``, ``note``, in that order); a section's counter and toggle get state named after
the section's number. The teacher's slips are the flat component's kinds, with one opportunity
per place: ``tag`` at the ``h1``, every ``h2`` and every text; ``undefined`` and ``key`` at every
list; ``attr`` at the page's ``className`` and every button; ``hook`` at every state hook. So a
page of N sections has about 2.5 N compile-breaking opportunities, and one slip among dozens
of lines decides whether the page compiles.
"""

from __future__ import annotations

import random

from botgrpo.tasks.teacher import Teacher

HEADINGS = (
    "Fruit", "Deals", "Hours", "Team", "News", "Help", "Staff",
    "Events", "Offers", "Tips", "Today", "Later", "Prices", "Notes",
)  # fmt: skip
#: The most sections a page may have (each heading once).
MAX_SECTIONS = 8


def sample_page(
    rng: random.Random,
    sections: int,
    min_parts: int,
    max_parts: int,
    titles,
    draw_part,
    parts,
) -> tuple[str, dict]:
    """A page's prompt and spec: a title and ``sections`` sections, each with a heading and
    ``min_parts``..``max_parts`` parts drawn by ``draw_part(rng, part) -> (value, text)``."""
    title = rng.choice(titles)
    spec: dict[str, object] = {"title": title, "sections": []}
    lines = [f"Page {title}"]
    for heading in rng.sample(HEADINGS, sections):
        chosen = set(rng.sample(parts, rng.randint(min_parts, max_parts)))
        section: dict[str, object] = {"heading": heading}
        bits = []
        for part in parts:
            if part in chosen:
                section[part], text = draw_part(rng, part)
                bits.append(text)
        spec["sections"].append(section)  # type: ignore[union-attr]
        lines.append(f"- {heading}: " + "; ".join(bits))
    return "\n".join(lines) + "\n", spec


def page_expected_text(spec, section_text) -> list[str]:
    """The texts a solved page shows, in order: the title, then each section's heading and the
    texts ``section_text(section)`` lists for its parts."""
    out = [spec["title"]]
    for section in spec["sections"]:
        out.append(section["heading"])
        out.extend(section_text(section))
    return out


def page_lines(spec, teacher: Teacher, rng: random.Random, parts) -> list[str]:
    """The teacher's page, one string per line, slipping at each opportunity."""
    slip = teacher.slips
    lines = [f"export default function {spec['title']}() {{"]
    for k, section in enumerate(spec["sections"], start=1):
        for state, setter, init, part in (
            (f"n{k}", f"setN{k}", "0", "counter"),
            (f"on{k}", f"setOn{k}", "false", "toggle"),
        ):
            if part in section:
                hook = f"React.useState({init})"
                call = f"React ? {hook} : [{init}]" if slip("hook", rng) else hook
                lines.append(f"  const [{state}, {setter}] = {call};")
    lines.append(f'  return <div {"class" if slip("attr", rng) else "className"}="page">')
    lines.append(f"    <h1>{spec['title']}</{'h2' if slip('tag', rng) else 'h1'}>")
    for k, section in enumerate(spec["sections"], start=1):
        lines.append("    <section>")
        lines.append(f"      <h2>{section['heading']}</{'h3' if slip('tag', rng) else 'h2'}>")
        for part in parts:
            if part not in section:
                continue
            value = section[part]
            if part in ("text", "note"):
                lines.append(f"      <p>{value}</{'b' if slip('tag', rng) else 'p'}>")
            elif part == "list":
                items = ", ".join(f'"{w}"' for w in value)
                key = "" if slip("key", rng) else " key={x}"
                child = "item" if slip("undefined", rng) else "x"
                lines.append("      <ul>")
                lines.append(f"        {{[{items}].map((x) => <li{key}>{{{child}}}</li>)}}")
                lines.append("      </ul>")
            else:
                handler = "onclick" if slip("attr", rng) else "onClick"
                if part == "counter":
                    lines.append(
                        f"      <button {handler}={{() => setN{k}(n{k} + 1)}}>{value} {{n{k}}}</button>"
                    )
                else:
                    lines.append(
                        f"      <button {handler}={{() => setOn{k}(!on{k})}}>{value[0]}</button>"
                    )
                    lines.append(f"      {{on{k} && <p>{value[1]}</p>}}")
        lines.append("    </section>")
    lines += ["  </div>;", "}"]
    return lines
