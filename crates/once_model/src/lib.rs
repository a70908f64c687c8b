//! The plain-data vocabulary every `once` crate speaks.
//!
//! Nothing here knows about salsa, Starlark, files on disk or any protocol: these are
//! `Clone + Eq + Hash` values that queries return and front ends convert.
//!
//! - [`action`]: the steps a target's capability declares ([`Action`]).
//! - [`codec`]: the one length-prefixed binary encoding (files kept between processes,
//!   the canonical encodings keys are hashed over).
//! - [`paths`]: workspace-relative paths joined and normalised lexically.
//! - [`interpreter`]: what a Python interpreter setting (`python`) names.
//! - [`label`]: canonical target labels and the reference syntax used inside manifests.
//! - [`schema`]: the typed contract of a target kind ([`KindSchema`]).
//! - [`script`]: the contract an annotated script's `# once` directives declare.
//! - [`value`]: attribute values as written in `attrs` tables ([`AttrValue`]).
//! - [`diagnostic`]: diagnostics as data ([`Diagnostic`], [`DiagnosticCode`]).
//! - [`text`]: byte ranges and 1-based line/column positions.
//! - [`vocabulary`]: the keys of a manifest's tables, their shapes and docs.
//! - [`remote`]: the root manifest's `[cache]` table as declared ([`remote::RemoteCacheDecl`]).

pub mod action;
pub mod codec;
pub mod diagnostic;
pub mod digest;
pub mod framed;
pub mod interpreter;
pub mod label;
pub mod paths;
pub mod plan_memo;
pub mod remote;
pub mod schema;
pub mod script;
pub mod text;
pub mod value;
pub mod vocabulary;

pub use action::{Action, ActionStep, Command, TargetActions, build_dir};
pub use diagnostic::{Diagnostic, DiagnosticCode, Fix, FixEdit, Severity, SeverityCounts};
pub use digest::Sha256Digest;
pub use label::{
    LabelError, TargetLabel, escape_invisible, first_invisible, is_invisible, is_valid_target_name,
    resolve_reference,
};
pub use plan_memo::PlanMemo;
pub use schema::{
    AttrSpec, AttrType, Capability, DependencyRole, Example, ExampleFile, ExampleSummary,
    KindOrigin, KindSchema, SourceReference, ToolSpec, TypeMismatch,
};
pub use text::{LineCol, LineColRange, TextRange};
pub use value::{AttrValue, Float};
pub use vocabulary::{KeyShape, MANIFEST_KEYS, ManifestKey, ManifestTable};
