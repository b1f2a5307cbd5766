"""React verdicts on code that uses libraries the checker does not have (real node and jsdom).

Stubbed modules behave like a permissive library: components render their children and text,
hooks and functions return stand-ins, icons are svgs. Blank means nothing visible; errors in the
component's own code still fail the render on their line.
"""

from __future__ import annotations

import pytest

from botgrpo.rewards.recipes.react import WorkerPool, check_components


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(2) as workers:
        yield workers


def check(pool, *codes: str, timeout_s: float = 2.0):
    return check_components(list(codes), timeout_s=timeout_s, pool=pool)


def errors(result) -> set[tuple[int | None, str | None]]:
    return {(d.line, d.rule) for d in result.diagnostics if d.severity != "warning"}


def warnings(result) -> set[tuple[int | None, str | None]]:
    return {(d.line, d.rule) for d in result.diagnostics if d.severity == "warning"}


CARD = """import { Card, CardHeader, CardTitle, CardContent } from "@/components/ui/card";

export default function Sales() {
  return (
    <Card className="w-64">
      <CardHeader>
        <CardTitle>Sales</CardTitle>
      </CardHeader>
      <CardContent>
        <span>1,204 orders</span>
      </CardContent>
    </Card>
  );
}
"""


def test_a_component_built_from_stubbed_library_components_shows_its_text(pool):
    [r] = check(pool, CARD)
    assert r.compiled and r.rendered and r.blank is False
    assert r.text == "Sales 1,204 orders"
    assert r.unknown_imports == ("@/components/ui/card",)
    assert warnings(r) == {(1, "unknown-import")}
    assert errors(r) == set()


HOOKS = """import { useLanguage } from "@/hooks/use-language";
import { useStore, useQuery } from "./store";
import Autoplay from "embla-carousel-autoplay";
import { QueryClient } from "@tanstack/react-query";
import { cn } from "@/lib/utils";

const client = new QueryClient();

export default function Dashboard() {
  const { dir, t } = useLanguage();
  const [count, setCount] = useStore();
  const { data, isLoading, error } = useQuery({ queryKey: ["x"] });
  const plugin = Autoplay({ delay: 2000 });
  plugin.reset();
  client.invalidateQueries();
  if (isLoading) return <p>Loading</p>;
  if (error) return <p>Failed: {error.message}</p>;
  const rows = [...data.rows];
  for (const row of rows) row.cells.map((c) => c.value);
  return (
    <section dir={dir} className={cn("p-4", count > 3 && "wide")}>
      <h1>Overview {`${data.user.profile.name}`}</h1>
      <button onClick={() => setCount(count + 1)}>More</button>
      <p>{rows.length} rows</p>
    </section>
  );
}
"""


def test_imported_hooks_destructure_and_called_or_constructed_imports_work(pool):
    [r] = check(pool, HOOKS)
    assert r.rendered and r.blank is False, r.diagnostics
    assert (
        r.text == "Overview More 3 rows"
    )  # flags read false: the loading and error branches stay closed
    assert errors(r) == set()
    assert {line for line, rule in warnings(r) if rule == "unknown-import"} == {1, 2, 3, 4, 5}


MEMBERS = """import * as Select from "@radix-ui/react-select";
import { Form, FormField, FormItem, FormLabel } from "@/components/ui/form";
import { Tooltip } from "@/components/ui/tooltip";
import { motion } from "framer-motion";
import styled from "styled-components";

const Box = styled.div`color: red;`;

export function Settings() {
  return (
    <Form>
      <Select.Root>
        <Select.Trigger>Theme</Select.Trigger>
      </Select.Root>
      <FormField name="email" render={({ field }) => <FormItem><FormLabel>Email {field.name}</FormLabel></FormItem>} />
      <Tooltip>{(state) => <span>Tip {state.open ? "open" : ""}</span>}</Tooltip>
      <motion.section initial={{ opacity: 0 }}><Box>Boxed</Box></motion.section>
    </Form>
  );
}
"""


def test_namespaced_members_render_props_and_tag_members_render_their_content(pool):
    [r] = check(pool, MEMBERS)
    assert r.rendered and r.blank is False, r.diagnostics
    assert r.text == "Theme Email Tip open Boxed"  # a stand-in is truthy unless it reads as a flag
    assert errors(r) == set()


DATA_PROPS = """import { Steps, Table, Segmented } from "antd";

const columns = [{ title: "Name", dataIndex: "name" }];
const data = [{ key: "1", name: "Ada" }];

export default function Demo() {
  return (
    <>
      <Steps items={[{ title: "Finished", description: "Step one" }]} />
      <Table columns={columns} dataSource={data} />
      <Segmented options={["Daily", "Weekly"]} />
    </>
  );
}
"""


def test_data_props_show_the_strings_a_library_would_show(pool):
    [r] = check(pool, DATA_PROPS)
    assert r.rendered and r.blank is False
    for word in ("Finished", "Step one", "Name", "Ada", "Daily", "Weekly"):
        assert word in r.text


ICONS = """import { ChevronRight } from "lucide-react";
import { MailIcon } from "@/components/icons";
import { Button } from "@/components/ui/button";

export default function Icons() {
  return <div><ChevronRight className="h-4 w-4" /><MailIcon /><Button /></div>;
}
"""

ONLY_BUTTON = """import { Button } from "@/components/ui/button";

export default function Only() {
  return <Button />;
}
"""


def test_icons_and_controls_are_visible_without_text(pool):
    icons, button = check(pool, ICONS, ONLY_BUTTON)
    assert icons.rendered and icons.blank is False and icons.text == ""
    assert button.rendered and button.blank is False


@pytest.mark.parametrize(
    "body",
    [
        "return <div />;",
        "return null;",
        "return <div>   </div>;",
        "return <Card><CardContent /></Card>;",  # stubs that carry nothing
        'return <Card><style>{".x { color: red }"}</style></Card>;',
    ],
)
def test_a_truly_blank_component_is_still_blank(pool, body):
    code = (
        'import { Card, CardContent } from "@/components/ui/card";\n\n'
        f"export default function Empty() {{\n  {body}\n}}\n"
    )
    [r] = check(pool, code)
    assert r.rendered is True and r.blank is True and r.text == "", body


OWN_ERRORS = [
    (
        # the component's own bug inside a stub's children
        'import { Card } from "@/components/ui/card";\n\nexport default function A() {\n'
        "  const user = null;\n  return (\n    <Card>\n      <p>{user.name}</p>\n    </Card>\n  );\n}\n",
        7,
    ),
    (
        # inside a render prop the stub calls
        'import { FormField } from "@/components/ui/form";\n\nexport default function A() {\n'
        "  return (\n    <FormField\n      render={() => {\n"
        "        return <p>{undefined.x}</p>;\n      }}\n    />\n  );\n}\n",
        7,
    ),
    (
        # React throws placing a stub's child: blamed on the line that used the stub
        'import { Card, CardTitle } from "@/components/ui/card";\n\nexport default function A() {\n'
        "  const data = { a: 1 };\n  return (\n    <div>\n      <Card>\n"
        "        <CardTitle>Sales</CardTitle>\n        {data}\n      </Card>\n    </div>\n  );\n}\n",
        7,
    ),
]


@pytest.mark.parametrize(("code", "line"), OWN_ERRORS)
def test_an_error_in_the_components_own_code_is_a_render_failure_on_its_line(pool, code, line):
    [r] = check(pool, code)
    assert r.compiled and r.rendered is False
    assert (line, "runtime-error") in errors(r), r.diagnostics


def test_a_timeout_is_blamed_on_the_loop_that_was_running(pool):
    code = (
        "function spin(n) {\n  let t = 0;\n  for (let i = 0; i < n; i++) {\n"
        "    while (t >= 0) t++;\n  }\n  return t;\n}\n\n"
        "export default function App() {\n  return <p>{spin(3)}</p>;\n}\n"
    )
    [r] = check(pool, code, timeout_s=0.5)
    assert r.rendered is False and errors(r) == {(4, "timeout")}


def test_a_component_that_needs_props_renders_with_stand_ins_and_a_warning(pool):
    needs = (
        "export function Nav({ items }) {\n"
        "  return <nav><h2>Menu</h2><ul>{items.map((i) => <li key={i.href}>{i.title}</li>)}</ul></nav>;\n"
        "}\n"
    )
    broken = (
        "export function Nav({ items }) {\n  const none = null;\n"
        "  return <nav>{none.title}{items.length}</nav>;\n}\n"
    )
    ok, bad = check(pool, needs, broken)
    assert ok.rendered is True and ok.text == "Menu"
    assert (1, "needs-props") in warnings(ok)
    assert bad.rendered is False and (3, "runtime-error") in errors(bad)


def test_an_async_component_is_awaited(pool):
    code = (
        'import { getPosts } from "@/lib/posts";\n\n'
        "export default async function Page() {\n"
        '  const title = await Promise.resolve("Latest posts");\n'
        "  const posts = await getPosts();\n"
        "  return <main><h1>{title}</h1><p>{posts.length} posts</p></main>;\n}\n"
    )
    failing = (
        "export default async function Page() {\n  await null;\n  throw new Error('down');\n}\n"
    )
    ok, bad = check(pool, code, failing)
    assert ok.rendered is True and ok.text == "Latest posts 0 posts", ok.diagnostics
    assert bad.rendered is False and (3, "runtime-error") in errors(bad)


def test_assets_css_modules_and_process_env_resolve_like_a_bundler(pool):
    code = (
        'import styles from "./App.module.css";\nimport "./global.css";\n'
        'import logo from "./logo.png";\nimport { ReactComponent as Mark } from "./mark.svg";\n\n'
        "export default function App() {\n"
        "  return (\n    <div className={styles.root}>\n"
        '      <img src={logo} alt="" /><Mark />\n'
        "      <p>{process.env.NODE_ENV}</p>\n    </div>\n  );\n}\n"
    )
    [r] = check(pool, code)
    assert r.rendered is True and r.text == "development" and r.unknown_imports == ()
    assert errors(r) == set() and warnings(r) == set()


LIBRARY_IDIOMS = {
    # a stubbed higher-order function renders the component it wraps
    "observer": (
        'import { observer } from "mobx-react-lite";\n'
        "function Counter() {\n  return <p>Count is shown</p>;\n}\n"
        "export default observer(Counter);\n",
        "Count is shown",
    ),
    "connect": (
        'import { connect } from "react-redux";\n'
        "function Count({ n }) {\n  return <p>Count</p>;\n}\n"
        "export default connect((s) => ({ n: s.n }))(Count);\n",
        "Count",
    ),
    # stand-ins are settled promises; React's use() reads a stubbed context
    "then and await": (
        'import axios from "axios";\nimport { useEffect, useState } from "react";\n\n'
        "export default function App() {\n  const [items, setItems] = useState([]);\n"
        '  useEffect(() => {\n    axios.get("/api").then((res) => setItems([res.data]));\n  }, []);\n'
        "  return <p>Items {items.length}</p>;\n}\n",
        "Items 0",  # it does not throw; the response arrives after the render
    ),
    "use context": (
        'import { use } from "react";\nimport { ThemeContext } from "./theme";\n\n'
        "export default function App() {\n  const theme = use(ThemeContext);\n"
        "  return <p>Theme {theme.name ? 'set' : 'unset'}</p>;\n}\n",
        "Theme set",
    ),
    # a stand-in as a host element's style is dropped (React throws on a non-object style)
    "style": (
        'import { styles } from "./theme";\n\n'
        "export default function App() {\n  return <div style={styles.box}><p>Hello</p></div>;\n}\n",
        "Hello",
    ),
    # element-valued text props render
    "element title": (
        'import { Card } from "antd";\n\n'
        "export default function App() {\n  return <Card title={<span>Sales report</span>} />;\n}\n",
        "Sales report",
    ),
    # freezing or defining properties on a stub keeps the Proxy's invariants
    "freeze": (
        'import { config, Button } from "./config";\nObject.freeze(config);\n'
        'Object.defineProperty(Button, "displayName", { value: "MyButton" });\n\n'
        "export default function App() {\n  return <Button>{String(config.name)} ok</Button>;\n}\n",
        "ok",
    ),
    # cloning a stub's element terminates
    "clone": (
        'import { cloneElement } from "react";\nimport { items } from "./menu";\n\n'
        "export default function App() {\n  return <p>{cloneElement(<span>{items[0].icon}</span>, {})}x</p>;\n}\n",
        "x",
    ),
}


@pytest.mark.parametrize("name", sorted(LIBRARY_IDIOMS))
def test_library_idioms_render_the_codes_content(pool, name):
    code, text = LIBRARY_IDIOMS[name]
    [r] = check(pool, code)
    assert r.rendered is True and errors(r) == set(), r.diagnostics
    assert r.text == text


def test_a_wrapped_components_own_bug_still_fails_the_render(pool):
    code = (
        'import { withRouter } from "react-router-dom";\n'
        "function Page() {\n  const x = null;\n  return <p>{x.y}</p>;\n}\n"
        "export default withRouter(Page);\n"
    )
    [r] = check(pool, code)
    assert r.rendered is False and (4, "runtime-error") in errors(r)


def test_a_timeout_is_blamed_on_the_loop_not_the_helper_it_calls(pool):
    code = (
        'function pad(n) {\n  return n < 10 ? "0" + n : String(n);\n}\n\n'
        "export default function Clock() {\n  const parts = [];\n"
        "  for (let i = 0; i < 24; i--) parts.push(pad(i));\n"
        '  return <p>{parts.join(":")}</p>;\n}\n'
    )
    directive = (
        'function helper() {\n  "use strict"\n  return 1;\n}\n\n'
        "export default function App() {\n  let s = helper();\n  while (true) {\n    s++;\n  }\n}\n"
    )
    loop, guarded = check(pool, code, directive, timeout_s=0.5)
    timeouts = [
        {(d.line, d.rule) for d in r.diagnostics if d.rule == "timeout"} for r in (loop, guarded)
    ]
    assert timeouts[0] == {(7, "timeout")}
    assert timeouts[1] == {(8, "timeout")}  # a directive without ";" keeps the guards


def test_the_text_keeps_the_spaces_between_words_and_elements(pool):
    code = (
        "export default function App() {\n"
        '  const a = "John", b = "Doe";\n'
        "  return <div><h1>Title</h1><p>{a} {b}</p></div>;\n}\n"
    )
    [r] = check(pool, code)
    assert r.text == "Title John Doe"
