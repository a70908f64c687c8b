//! Opaque Starlark values returned by the declaration helpers (`attr.string(…)`, `dep(…)`,
//! `capability(…)`, …).
//!
//! Each wraps plain, already validated Rust data; `target_kind` unpacks them by type, so a
//! module cannot pass a hand-built dict where a declaration is expected, and type errors
//! name the expected helper (`expected attr, got dict`).
//!
//! This module also holds [`DeclarationContext`], the registry behind `Evaluator::extra`.
//! Both need `ProvidesStaticType`, whose derive expands to an `unsafe impl`; that derive is
//! the only unsafe code in the crate, so the lint is relaxed for this module alone.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use allocative::Allocative;
use once_model::{
    AttrSpec, Capability, DependencyRole, Example, KindOrigin, KindSchema, SourceReference,
    ToolSpec,
};
use starlark::any::ProvidesStaticType;
use starlark::starlark_simple_value;
use starlark::values::{NoSerialize, StarlarkPagablePanic, StarlarkValue, starlark_value};

macro_rules! declaration_value {
    ($(#[$meta:meta])* $ty:ident($inner:ty), $type_name:literal, |$this:ident, $f:ident| $display:expr) => {
        $(#[$meta])*
        #[derive(Debug, ProvidesStaticType, NoSerialize, Allocative, StarlarkPagablePanic)]
        pub(crate) struct $ty(#[allocative(skip)] pub(crate) $inner);

        starlark_simple_value!($ty);

        #[starlark_value(type = $type_name)]
        impl<'v> StarlarkValue<'v> for $ty {}

        impl fmt::Display for $ty {
            fn fmt(&self, $f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let $this = &self.0;
                $display
            }
        }
    };
}

declaration_value!(
    /// `attr.<type>(…)`: an attribute without its name (the `attrs` dict key supplies it).
    AttrDecl(AttrSpec),
    "attr",
    |spec, f| write!(f, "attr.{}(required = {})", spec.ty, if spec.required { "True" } else { "False" })
);

declaration_value!(
    /// `dep(…)`: a dependency role.
    DepDecl(DependencyRole),
    "dep",
    |role, f| write!(f, "dep({:?})", role.name)
);

declaration_value!(
    /// `capability(…)`.
    CapabilityDecl(Capability),
    "capability",
    |cap, f| write!(f, "capability({:?})", cap.name)
);

declaration_value!(
    /// `tool(…)`.
    ToolDecl(ToolSpec),
    "tool",
    |tool, f| write!(f, "tool({:?})", tool.name)
);

declaration_value!(
    /// `source_reference(…)`.
    SourceReferenceDecl(SourceReference),
    "source_reference",
    |reference, f| write!(f, "source_reference({:?}, {:?})", reference.system, reference.symbol)
);

declaration_value!(
    /// `example(…)`, with its files already collected.
    ExampleDecl(Example),
    "example",
    |example, f| write!(f, "example({:?})", example.slug)
);

/// Where `example(files = "<dir>")` finds its files: the embedded prelude tree.
pub(crate) type EmbeddedFiles = &'static [(&'static str, &'static [u8])];

/// Per-evaluation state shared by the helpers.
#[derive(ProvidesStaticType)]
pub(crate) struct DeclarationContext {
    pub(crate) origin: KindOrigin,
    /// Prelude rules: every kind, attribute, role, capability and tool needs docs, and
    /// every kind needs an example.
    pub(crate) strict: bool,
    /// Set for the prelude: `example(files = "dir")` reads `examples/<dir>/**` from here.
    pub(crate) embedded: Option<EmbeddedFiles>,
    /// Kind names a module may not declare (the built-in ones).
    pub(crate) reserved: HashSet<String>,
    pub(crate) kinds: RefCell<Vec<KindSchema>>,
    /// Where each kind of `kinds` was declared, when the call site is in this module.
    pub(crate) sites: RefCell<Vec<crate::KindSite>>,
    /// Set when evaluation stopped because a kind name is built in.
    pub(crate) duplicate: std::cell::Cell<bool>,
    /// The longest `range` the guarded builtin creates (the step limit).
    pub(crate) max_range_len: std::cell::Cell<u64>,
    /// The longest text `str`, `repr` and `json.encode` produce (the heap limit).
    pub(crate) max_render_bytes: std::cell::Cell<usize>,
    /// Set while a kind's implementation runs: where `actions.*` record what it declares.
    pub(crate) plan: Option<crate::plan::PlanState>,
}

impl DeclarationContext {
    pub(crate) fn new(origin: KindOrigin) -> DeclarationContext {
        DeclarationContext {
            origin,
            strict: false,
            embedded: None,
            reserved: HashSet::new(),
            kinds: RefCell::new(Vec::new()),
            sites: RefCell::new(Vec::new()),
            duplicate: std::cell::Cell::new(false),
            max_range_len: std::cell::Cell::new(u64::MAX),
            max_render_bytes: std::cell::Cell::new(usize::MAX),
            plan: None,
        }
    }
}
