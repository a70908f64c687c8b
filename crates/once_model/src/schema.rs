//! The typed contract of a target kind, as declared in Starlark and read by every front end.

use std::fmt;

use crate::value::AttrValue;

/// Where a kind was declared.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KindOrigin {
    /// The prelude embedded in the binary; the string names the prelude file.
    Prelude(String),
    /// A project module, by workspace-relative path.
    Module(String),
}

/// Everything `once` knows about one target kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KindSchema {
    pub name: String,
    pub docs: String,
    pub attrs: Vec<AttrSpec>,
    /// Dependency roles; the default role is named `deps`.
    pub dependencies: Vec<DependencyRole>,
    /// Providers every target of this kind emits.
    pub providers: Vec<String>,
    pub capabilities: Vec<Capability>,
    pub tools: Vec<ToolSpec>,
    /// Globs of workspace files (relative to the workspace root) that every target of the
    /// kind reads wherever they are, such as the `Cargo.toml` files Cargo reads to load the
    /// Cargo workspace a crate belongs to: their matches reach the implementation as
    /// `ctx.workspace_inputs`.
    pub workspace_inputs: Vec<String>,
    pub source_references: Vec<SourceReference>,
    pub examples: Vec<Example>,
    pub origin: KindOrigin,
}

impl KindSchema {
    pub fn attr(&self, name: &str) -> Option<&AttrSpec> {
        self.attrs.iter().find(|a| a.name == name)
    }

    pub fn dependency_role(&self, name: &str) -> Option<&DependencyRole> {
        self.dependencies.iter().find(|d| d.name == name)
    }

    pub fn capability(&self, name: &str) -> Option<&Capability> {
        self.capabilities.iter().find(|c| c.name == name)
    }

    pub fn example(&self, slug: &str) -> Option<&Example> {
        self.examples.iter().find(|e| e.slug == slug)
    }

    /// The kind's family: the text before the first `_` (`rust_binary` → `rust`).
    pub fn family(&self) -> &str {
        self.name.split('_').next().unwrap_or(&self.name)
    }
}

/// The type of an attribute.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttrType {
    String,
    Bool,
    Int,
    Float,
    /// A reference to another target, resolved like `deps` entries.
    Label,
    /// A package-relative path of a file (or a directory holding files) the package has:
    /// resolution reports one it does not have (`missing_file`).
    Path,
    List(Box<AttrType>),
    /// A table with string keys.
    Dict(Box<AttrType>),
    Any,
}

impl AttrType {
    /// Parses the written form (`string`, `list[label]`, `dict[string]`, …).
    pub fn parse(text: &str) -> Option<AttrType> {
        let text = text.trim();
        if let Some(inner) = text.strip_prefix("list[").and_then(|t| t.strip_suffix(']')) {
            return AttrType::parse(inner).map(|t| AttrType::List(Box::new(t)));
        }
        if let Some(inner) = text.strip_prefix("dict[").and_then(|t| t.strip_suffix(']')) {
            return AttrType::parse(inner).map(|t| AttrType::Dict(Box::new(t)));
        }
        Some(match text {
            "string" => AttrType::String,
            "bool" => AttrType::Bool,
            "int" => AttrType::Int,
            "float" => AttrType::Float,
            "label" => AttrType::Label,
            "path" => AttrType::Path,
            "any" => AttrType::Any,
            _ => return None,
        })
    }

    /// Whether `value` has this type (labels and paths are strings here; their
    /// contents are checked separately).
    pub fn accepts(&self, value: &AttrValue) -> Result<(), TypeMismatch> {
        match (self, value) {
            (AttrType::Any, _) => Ok(()),
            (AttrType::String | AttrType::Label | AttrType::Path, AttrValue::String(_)) => Ok(()),
            (AttrType::Bool, AttrValue::Bool(_)) => Ok(()),
            (AttrType::Int, AttrValue::Int(_)) => Ok(()),
            (AttrType::Float, AttrValue::Float(_) | AttrValue::Int(_)) => Ok(()),
            (AttrType::List(inner), AttrValue::List(items)) => {
                for (i, item) in items.iter().enumerate() {
                    inner
                        .accepts(item)
                        .map_err(|e| e.inside(i, format!("element [{i}]")))?;
                }
                Ok(())
            }
            (AttrType::Dict(inner), AttrValue::Dict(entries)) => {
                for (i, (key, item)) in entries.iter().enumerate() {
                    inner
                        .accepts(item)
                        .map_err(|e| e.inside(i, format!("entry `{key}`")))?;
                }
                Ok(())
            }
            (expected, actual) => Err(TypeMismatch {
                path: Vec::new(),
                message: format!("expected {}, got {}", expected.noun(), actual.type_name()),
            }),
        }
    }

    fn noun(&self) -> String {
        match self {
            AttrType::String => "a string".into(),
            AttrType::Bool => "a bool".into(),
            AttrType::Int => "an int".into(),
            AttrType::Float => "a float".into(),
            AttrType::Label => "a target label string".into(),
            AttrType::Path => "a path string".into(),
            AttrType::List(_) => "a list".into(),
            AttrType::Dict(_) => "a table".into(),
            AttrType::Any => "any value".into(),
        }
    }
}

impl fmt::Display for AttrType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrType::String => f.write_str("string"),
            AttrType::Bool => f.write_str("bool"),
            AttrType::Int => f.write_str("int"),
            AttrType::Float => f.write_str("float"),
            AttrType::Label => f.write_str("label"),
            AttrType::Path => f.write_str("path"),
            AttrType::List(inner) => write!(f, "list[{inner}]"),
            AttrType::Dict(inner) => write!(f, "dict[{inner}]"),
            AttrType::Any => f.write_str("any"),
        }
    }
}

/// Where inside a value a type check failed, and why.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TypeMismatch {
    /// Positions from the outer value inwards: list indices or table entry positions.
    pub path: Vec<usize>,
    /// `element [1]: expected a string, got int`.
    pub message: String,
}

impl TypeMismatch {
    fn inside(mut self, position: usize, place: String) -> TypeMismatch {
        self.path.insert(0, position);
        self.message = format!("{place}: {}", self.message);
        self
    }
}

impl fmt::Display for TypeMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// One attribute a kind declares.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AttrSpec {
    pub name: String,
    pub ty: AttrType,
    pub required: bool,
    /// The value used when the target does not set the attribute.
    pub default: Option<AttrValue>,
    pub docs: String,
    /// Whether the value may be a `{ select = { … } }` table.
    pub configurable: bool,
    /// When non-empty, the only string values allowed (for lists: for each element).
    pub allowed_values: Vec<String>,
    /// For an `int`: the smallest and largest value allowed (inclusive).
    pub range: Option<(i64, i64)>,
}

/// A named dependency role and what it accepts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DependencyRole {
    /// `deps` for the default role (the top-level `deps` field), otherwise a key of
    /// the target's `dependencies` table.
    pub name: String,
    pub docs: String,
    /// A dependency fits when it emits any of these providers.
    pub providers: Vec<String>,
    pub min: u32,
    pub max: Option<u32>,
}

/// A capability (`build`, `run`, `test`) and what it produces.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Capability {
    pub name: String,
    pub docs: String,
    pub output_groups: Vec<String>,
    /// Output groups that must be built before this capability runs.
    pub requires_outputs: Vec<String>,
    /// For `test`: the runner family (`cargo`, `pytest`, `sh`, …).
    pub runner: Option<String>,
}

/// A program the kind runs, looked up on `PATH`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ToolSpec {
    pub name: String,
    pub docs: String,
}

/// An equivalent concept in another build system.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceReference {
    pub system: String,
    pub symbol: String,
    pub url: String,
    pub use_when: String,
    /// Hex SHA-256 of `system`, `symbol` and `url`, stable across releases.
    pub content_digest: String,
}

/// A runnable starter: a complete file tree.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Example {
    pub slug: String,
    pub name: String,
    pub use_when: String,
    /// Sorted by path; paths are relative to the workspace the starter creates.
    pub files: Vec<ExampleFile>,
}

impl Example {
    pub fn summary(&self) -> ExampleSummary {
        ExampleSummary {
            slug: self.slug.clone(),
            name: self.name.clone(),
            use_when: self.use_when.clone(),
        }
    }
}

/// The lightweight descriptor of an example, without its files.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExampleSummary {
    pub slug: String,
    pub name: String,
    pub use_when: String,
}

/// One file of an example.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExampleFile {
    pub path: String,
    /// Borrowed when the file is one the binary embeds (the built-in starters), so
    /// loading and copying the kind catalog does not copy the starter trees.
    pub contents: std::borrow::Cow<'static, [u8]>,
}
