//! The pure model of a chat: what the agent sent, parsed once into typed
//! data, the conversation it builds, and the text the view shows of it.
//! No I/O, no threads, no Neovim: every function here is a computation a
//! unit test can run.
//!
//! May use: nothing.

pub mod blocks;
pub mod compaction;
pub mod delegation;
pub mod entries;
pub mod events;
pub mod filetext;
pub mod patch;
pub mod paths;
pub mod raw_output;
pub mod record;
pub mod render;
pub mod render_delegation;
pub mod revert;
pub mod schema;
pub mod shellwords;
pub mod terminal_views;
pub mod textdiff;
pub mod thread;
pub mod update;
