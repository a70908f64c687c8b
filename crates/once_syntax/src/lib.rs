//! Placeholder while the crate is being written.
