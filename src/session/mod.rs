//! Chats: each chat binds its conversation model to an ACP session of its
//! agent and serves the agent's requests for it. The handle's concerns are
//! split by file: `handle` (its state, what the view reads, what the
//! connection and the editor handlers call), `opening` (sessions, sign-in),
//! `turns` (prompts, cancels, the view's requests), `asking` (permission
//! requests and their answers) with `permission` (the pending requests and
//! grants), `keeping` (what is kept of the chat on disk, in `kept_chats`), `branch` (continuing from an earlier
//! point: a fork of the session at a message, or a new session), `lifecycle`
//! (system prompt, defaults, idle sessions closed and resumed, closing). `registry` holds the open chats and `agents` the agent
//! processes they share.
//!
//! May use: editor, protocol, runtime, bridge, model, config, log.

pub mod agents;
mod asking;
pub mod branch;
pub mod handle;
mod keeping;
pub mod kept_chats;
mod lifecycle;
mod opening;
pub mod permission;
pub mod registry;
mod shown;
mod subagents;
mod turns;
