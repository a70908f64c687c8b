//! Evaluating project modules: declared kinds, and diagnostics with 1-based positions.

use expect_test::{Expect, expect};

use crate::{EvalLimits, evaluate_module};

/// Evaluates `source` as `modules/test.star` and renders kinds and diagnostics compactly.
fn check(source: &str, expect: Expect) {
    check_with(source, &EvalLimits::default(), expect);
}

fn check_with(source: &str, limits: &EvalLimits, expect: Expect) {
    let result = evaluate_module("modules/test.star", source, limits);
    let mut out = String::new();
    for kind in &result.kinds {
        out.push_str(&crate::tests::render_kind(kind));
    }
    for d in &result.diagnostics {
        out.push_str(&format!(
            "error {}:{}:{}-{}:{}: {}\n",
            d.path, d.line, d.column, d.end_line, d.end_column, d.message
        ));
    }
    expect.assert_eq(&out);
}

#[test]
fn valid_module_declares_kinds() {
    check(
        r#"
COMMON = {"verbose": attr.bool("Print every step.", default = False)}

def protoc_attrs(extra: dict[str, typing.Any]) -> dict[str, typing.Any]:
    attrs = dict(COMMON)
    attrs.update(extra)
    return attrs

target_kind(
    name = "proto_library",
    docs = "Protocol buffer definitions.",
    attrs = protoc_attrs({
        "import_prefix": attr.path("Prefix added to import paths."),
        "plugins": attr.string_list("protoc plugins", values = ["grpc", "validate"], default = ["grpc"]),
        "options": attr.string_dict("Extra options.", configurable = False),
        "level": attr.of("list[int]", "Levels.", default = [1, 2]),
    }),
    deps = [dep(providers = ["proto"], docs = "Imported protos."), dep("plugin", "The plugin.", providers = ["executable"], min = 1, max = 1)],
    providers = ["proto"],
    capabilities = [capability("build", "Compiles descriptors.", output_groups = ["default", "descriptor_set"])],
    tools = [tool("protoc", "The compiler.")],
    source_references = [source_reference("Bazel", "proto_library", "https://bazel.build/reference/be/protocol-buffer#proto_library", "You used proto_library.")],
    examples = [example("proto-minimal", "Minimal", "Start here.", files = {"once.toml": "[[target]]\n", "a.proto": "syntax = \"proto3\";\n"})],
)

for lang in ["go", "py"]:
    target_kind(f"{lang}_proto", docs = f"{lang} code from protos.", capabilities = [
        capability("build"),
        capability("test", runner = "sh", requires_outputs = ["default"]),
    ])
"#,
        expect![[r#"
            kind go_proto (module modules/test.star)
              capability build -> default
              capability test -> default (requires default) (runner sh)
            kind proto_library (module modules/test.star)
              attr verbose: bool [default=false]
              attr import_prefix: path
              attr plugins: list[string] [default=["grpc"], values=grpc|validate]
              attr options: dict[string] [fixed]
              attr level: list[int] [default=[1, 2]]
              dep deps <- proto [0..]
              dep plugin <- executable [1..1]
              provides proto
              capability build -> default, descriptor_set
              tool protoc
              see Bazel proto_library 805afaeae1e4
              example proto-minimal: a.proto, once.toml
            kind py_proto (module modules/test.star)
              capability build -> default
              capability test -> default (requires default) (runner sh)
        "#]],
    );
}

#[test]
fn syntax_error() {
    check(
        "target_kind(name = \"x\"\n",
        expect![[r#"
        error modules/test.star:2:1-2:1: Parse error: unexpected new line, expected symbol ')'
    "#]],
    );
}

#[test]
fn unknown_attr_type() {
    check(
        r#"
target_kind("a", "docs", attrs = {"x": attr.strng()})
"#,
        expect![[r#"
            error modules/test.star:2:40-2:52: unknown attribute type `attr.strng`; did you mean `attr.string`? (available: attr.string, attr.bool, attr.int, attr.float, attr.label, attr.path, attr.string_list, attr.label_list, attr.path_list, attr.string_dict, attr.of)
        "#]],
    );
    check(
        r#"target_kind("a", attrs = {"x": attr.of("map<string>")})"#,
        expect![[r#"
        error modules/test.star:1:32-1:54: unknown attribute type `map<string>`; expected one of string, bool, int, float, label, path, any, list[T], dict[T]
    "#]],
    );
}

#[test]
fn duplicate_kind() {
    check(
        "target_kind(\"a\")\n\ntarget_kind(\"b\")\ntarget_kind(\"a\")\n",
        expect![[r#"
        kind a (module modules/test.star)
        kind b (module modules/test.star)
        error modules/test.star:4:1-4:17: target kind `a` is declared more than once
    "#]],
    );
    check(
        "target_kind(\"rust_binary\")\n",
        expect![[r#"
            error modules/test.star:1:1-1:27: target kind `rust_binary` is built in; choose another name
        "#]],
    );
}

#[test]
fn wrong_argument_type() {
    check(
        "target_kind(name = 42)\n",
        expect![[r#"
        error modules/test.star:1:1-1:23: Type of parameter `name` doesn't match, expected `str`, actual `int (repr: 42)`
    "#]],
    );
    check(
        "target_kind(\"a\", attrs = {\"x\": \"string\"})\n",
        expect![[r#"
        error modules/test.star:1:1-1:42: Type of parameter `attrs` doesn't match, expected `dict[str, attr]`, actual `dict (repr: {"x": "string"})`
    "#]],
    );
    check(
        "target_kind(\"a\", deps = [dep(min = 2, max = 1)])\n",
        expect![[r#"
        error modules/test.star:1:26-1:47: dep `deps`: `min` (2) is greater than `max` (1)
    "#]],
    );
}

#[test]
fn attribute_rules() {
    check(
        r#"attr.string(required = True, default = "x")"#,
        expect![[r#"
        error modules/test.star:1:1-1:44: a required attribute cannot have a default (`"x"`); drop one of them
    "#]],
    );
    check(
        r#"attr.int(default = "3")"#,
        expect![[r#"
        error modules/test.star:1:1-1:24: default `"3"` does not fit type `int`: expected an int, got string
    "#]],
    );
    check(
        r#"attr.string_list(default = ["a", 1])"#,
        expect![[r#"
        error modules/test.star:1:1-1:37: default `["a", 1]` does not fit type `list[string]`: element [1]: expected a string, got int
    "#]],
    );
    check(
        r#"attr.string(values = ["a", "b"], default = "c")"#,
        expect![[r#"
        error modules/test.star:1:1-1:48: default `c` is not one of the allowed values: a, b
    "#]],
    );
    check(
        r#"attr.bool(values = ["a"])"#,
        expect![[r#"
        error modules/test.star:1:1-1:26: Found `values` extra named parameter(s) for call to bool
    "#]],
    );
    check(
        "x = []\nx.append(x)\nattr.of(\"any\", default = x)\n",
        expect![[r#"
        error modules/test.star:3:1-3:28: default value nests more than 32 levels deep
    "#]],
    );
}

#[test]
fn capability_rules() {
    check(
        r#"capability("deploy")"#,
        expect![[r#"
        error modules/test.star:1:1-1:21: unknown capability `deploy`; a capability is one of `build`, `run`, `test`
    "#]],
    );
    check(
        r#"capability("build", runner = "cargo")"#,
        expect![[r#"
        error modules/test.star:1:1-1:38: capability `build`: only a `test` capability takes a `runner`
    "#]],
    );
    check(
        r#"target_kind("a", capabilities = [capability("run", requires_outputs = ["bundle"])])"#,
        expect![[r#"
            error modules/test.star:1:1-1:84: kind `a`: capability `run` requires output group `bundle`, which no other capability of the kind produces
        "#]],
    );
}

#[test]
fn example_rules() {
    check(
        r#"example("x", "X", "when", files = "rust_binary/minimal")"#,
        expect![[r#"
        error modules/test.star:1:1-1:57: example `x`: `files` must be a dict of {path: contents}; directory names are only understood in the built-in prelude
    "#]],
    );
    check(
        r#"example("x", "X", "when", files = {"src/a.rs": "fn a() {}"})"#,
        expect![[r#"
        error modules/test.star:1:1-1:61: example `x`: the files must include a `once.toml` manifest
    "#]],
    );
    check(
        r#"example("x", "X", "when", files = {"../once.toml": "x"})"#,
        expect![[r#"
        error modules/test.star:1:1-1:57: example `x`: `../once.toml` must be a relative `/`-separated path without `.` or `..` segments
    "#]],
    );
}

#[test]
fn step_limit_stops_infinite_loop() {
    let limits = EvalLimits {
        max_steps: 100_000,
        // Far beyond the time this takes: the test is about another limit.
        deadline: std::time::Duration::from_secs(300),
        ..EvalLimits::default()
    };
    check_with(
        "def spin():\n    n = 0\n    for i in range(100000):\n        for j in range(100000):\n            n += j\n    return n\n\nspin()\n",
        &limits,
        expect![[r#"
            error modules/test.star:5:13-5:19: Execution duration limit of 100000 ticks has been exceeded
        "#]],
    );
}

#[test]
fn memory_limit_stops_huge_allocation() {
    let limits = EvalLimits {
        max_bytes: 8 << 20,
        // Far beyond the time this takes: the test is about another limit.
        deadline: std::time::Duration::from_secs(300),
        ..EvalLimits::default()
    };
    check_with(
        "chunk = \"x\" * 1000\nparts = []\nfor i in range(1000000):\n    parts.append(chunk + str(i))\n",
        &limits,
        expect![[r#"
            error modules/test.star:4:5-4:33: Heap memory limit of 8388608 bytes exceeded.
            This error is usually emitted some time after the limit is actually exceeded, so the span may not be informative.
        "#]],
    );
}

#[test]
fn load_without_a_module_source_fails() {
    check(
        "load(\"other.star\", \"x\")\n",
        expect![[r#"
            error modules/test.star:1:1-1:24: cannot load `modules/other.star`: module `modules/other.star` does not exist
        "#]],
    );
}

#[test]
fn keyword_forms_and_list_types() {
    check(
        r#"target_kind(name = "k", attrs = {"t": attr.of(type = "dict[list[int]]", default = {"a": [1]})})"#,
        expect![[r#"
            kind k (module modules/test.star)
              attr t: dict[list[int]] [default={ a = [1] }]
        "#]],
    );
    check(
        r#"target_kind(name = "k", deps = [attr.string()])"#,
        expect![[r#"
            error modules/test.star:1:1-1:48: Type of parameter `deps` doesn't match, expected `list[dep] | tuple[dep, ...]`, actual `list (repr: [attr.string(required = False)])`
        "#]],
    );
    check(
        r#"target_kind("k", providers = ["Files"])"#,
        expect![[r#"
        error modules/test.star:1:1-1:40: kind `k`: invalid provider `Files`: use lower-case letters, digits and `_`, starting with a letter or `_`
    "#]],
    );
}

/// The prelude's stricter rules, checked through the same evaluator.
fn check_strict(source: &str, expect: Expect) {
    let mut ctx = crate::values::DeclarationContext::new(once_model::KindOrigin::Prelude(
        "test.star".to_owned(),
    ));
    ctx.strict = true;
    ctx.embedded = Some(&[("examples/k/ok/once.toml", b"[workspace]\n")]);
    let (kinds, error) = crate::eval::run("prelude/test.star", source, &EvalLimits::default(), ctx);
    let mut out: String = kinds.iter().map(crate::tests::render_kind).collect();
    if let Some(d) = error {
        out.push_str(&format!(
            "error {}:{}:{}: {}\n",
            d.path, d.line, d.column, d.message
        ));
    }
    expect.assert_eq(&out);
}

#[test]
fn prelude_rules() {
    check_strict(
        "target_kind(\"k\")\n",
        expect![[r#"
        error prelude/test.star:1:1: target kind `k` needs non-empty `docs`
    "#]],
    );
    check_strict(
        "target_kind(\"k\", \"Docs.\", attrs = {\"a\": attr.int()})\n",
        expect![[r#"
            error prelude/test.star:1:1: attribute `a` of kind `k` needs non-empty `docs`
        "#]],
    );
    check_strict(
        "target_kind(\"k\", \"Docs.\", capabilities = [capability(\"build\")])\n",
        expect![[r#"
            error prelude/test.star:1:1: capability `build` of kind `k` needs non-empty `docs`
        "#]],
    );
    check_strict(
        "target_kind(\"k\", \"Docs.\")\n",
        expect![[r#"
        error prelude/test.star:1:1: target kind `k` needs at least one example
    "#]],
    );
    check_strict(
        "example(\"ok\", \"Ok\", \"Always.\", files = \"k/missing\")\n",
        expect![[r#"
        error prelude/test.star:1:1: example `ok`: no files under `prelude/examples/k/missing/`
    "#]],
    );
    check_strict(
        "target_kind(\"k\", \"Docs.\", examples = [example(\"ok\", \"Ok\", \"Always.\", files = \"k/ok\")])\n",
        expect![[r#"
            kind k (prelude test.star)
              example ok: once.toml
        "#]],
    );
}

/// A [`crate::ModuleSource`] over an in-memory table.
struct Table(&'static [(&'static str, &'static str)]);

impl crate::ModuleSource for Table {
    fn read(&self, path: &str) -> Result<String, String> {
        self.0
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, s)| (*s).to_owned())
            .ok_or_else(|| "no such module".to_owned())
    }
}

fn check_loads(files: &'static [(&'static str, &'static str)], expect: Expect) {
    let (path, source) = files[0];
    let result =
        crate::evaluate_module_with_loads(path, source, &EvalLimits::default(), &Table(files));
    let mut out = format!("loads: {}\n", result.loads.join(", "));
    for kind in &result.kinds {
        out.push_str(&crate::tests::render_kind(kind));
    }
    for site in &result.sites {
        out.push_str(&format!(
            "site {} {}:{}-{}:{}\n",
            site.kind, site.line, site.column, site.end_line, site.end_column
        ));
    }
    for d in &result.diagnostics {
        out.push_str(&format!(
            "{:?} {}:{}:{}-{}:{}: {}\n",
            d.kind, d.path, d.line, d.column, d.end_line, d.end_column, d.message
        ));
    }
    expect.assert_eq(&out);
}

#[test]
fn load_shares_helpers_between_modules() {
    check_loads(
        &[
            (
                "modules/app.star",
                "load(\"lib/common.star\", \"make_kind\")\nload(\"//modules/lib/common.star\", \"FLAG\")\n\nmake_kind(\"app_bundle\")\n",
            ),
            (
                "modules/lib/common.star",
                "FLAG = attr.bool(\"Verbose.\")\n\ndef make_kind(name):\n    target_kind(name, \"A bundle.\", attrs = {\"verbose\": FLAG})\n\ntarget_kind(\"lib_kind\")\n",
            ),
        ],
        expect![[r#"
            loads: modules/lib/common.star
            kind app_bundle (module modules/app.star)
              attr verbose: bool
            site app_bundle 4:1-4:24
        "#]],
    );
}

#[test]
fn load_errors_point_at_the_load() {
    check_loads(
        &[("modules/a.star", "load(\"missing.star\", \"x\")\n")],
        expect![[r#"
            loads: 
            LoadNotFound modules/a.star:1:1-1:26: cannot load `modules/missing.star`: no such module
        "#]],
    );
    check_loads(
        &[("modules/a.star", "load(\"../../x.star\", \"x\")\n")],
        expect![[r#"
            loads: 
            LoadNotFound modules/a.star:1:1-1:26: `load("../../x.star")` escapes the workspace
        "#]],
    );
    check_loads(
        &[
            ("m/a.star", "load(\"b.star\", \"x\")\n"),
            ("m/b.star", "load(\"a.star\", \"y\")\nx = 1\n"),
        ],
        expect![[r#"
            loads: 
            Invalid m/a.star:1:1-1:20: loaded module m/b.star:1:1: load cycle: m/a.star -> m/b.star -> m/a.star
        "#]],
    );
    check_loads(
        &[
            ("m/a.star", "load(\"b.star\", \"x\")\n"),
            ("m/b.star", "x = 1 +\n"),
        ],
        expect![[r#"
            loads: 
            Invalid m/a.star:1:1-1:20: loaded module m/b.star:1:8: Parse error: unexpected new line, expected expression
        "#]],
    );
}

#[test]
fn built_in_kind_names_are_duplicates() {
    check_loads(
        &[("m/a.star", "target_kind(\"rust_binary\")\n")],
        expect![[r#"
            loads: 
            DuplicateKind m/a.star:1:1-1:27: target kind `rust_binary` is built in; choose another name
        "#]],
    );
}

/// Doubling a string takes few steps, so the periodic limit checks would come too late;
/// the per-statement check stops it near the limit.
#[test]
fn memory_limit_stops_doubling_within_a_statement_or_two() {
    let limits = EvalLimits {
        max_bytes: 8 << 20,
        // Far beyond the time this takes: the test is about another limit.
        deadline: std::time::Duration::from_secs(300),
        ..EvalLimits::default()
    };
    check_with(
        "s = \"x\"\nfor i in range(64):\n    s = s + s\n",
        &limits,
        expect![[r#"
            error modules/test.star:3:5-3:14: Heap memory limit of 8388608 bytes exceeded.
            This error is usually emitted some time after the limit is actually exceeded, so the span may not be informative.
        "#]],
    );
}
