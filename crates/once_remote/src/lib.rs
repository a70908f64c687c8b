//! The remote cache: a shared cache on servers teams already run, behind the local store.
//!
//! `once_exec` knows a remote cache only through its [`once_exec::RemoteCache`] trait;
//! this crate implements it for two protocols:
//!
//! - [`grpc`]: the Remote Execution API v2 over gRPC (`grpc://`, `grpcs://`): BuildGrid,
//!   Buildbarn, NativeLink, bazel-remote's gRPC port, BuildBuddy;
//! - [`http`]: Bazel's HTTP cache protocol (`http://`, `https://`): bazel-remote, any
//!   WebDAV server (nginx with `dav_methods PUT`).
//!
//! [`settings`] decides which server a command uses (the root manifest's `[cache]`, the
//! environment, the command line) and where credentials come from; [`mapping`] maps
//! action keys and records onto REAPI messages; [`client`] is the [`RemoteClient`] with
//! its retries, circuit breakers, verified downloads and background uploads; [`stats`]
//! keeps the counters `once cache stats` shows.
//!
//! The async runtime gRPC needs is owned by the gRPC transport and never leaves this
//! crate: the rest of `once` stays synchronous. docs/remote-cache.md describes it all for
//! users.

pub mod client;
pub mod grpc;
pub mod http;
pub mod mapping;
pub mod settings;
pub mod stats;
pub mod transport;

pub use client::{RemoteClient, RemoteSummary};
pub use settings::{Overrides, RemoteSettings, resolve};
