//! The editor side of a chat: the agent's `fs/*` and `terminal/*` requests
//! served from live buffers (or disk) and Neovim jobs, and what the chat
//! keeps of them.
//!
//! - `handlers`: serves the requests, through the chat's `EditorHost`;
//! - `state`: the chat's roots, policy, the texts the agent was served and
//!   wrote (the single owner of the text the agent and the buffer last
//!   agreed on), the change records and the terminals;
//! - `policy`: how the user's auto-allow rules judge a request, and what an
//!   allowed request grants;
//! - `roots`, `confine`, `fs`, `fs_error`: the roots check, what an opened
//!   path really is, disk reads and atomic writes, and the error a request
//!   fails with;
//! - `terminal`: output limits, exit status and waits of client terminals;
//! - `files`: the `@` completion file walk;
//! - `agreed`: the text each synced buffer and its file last agreed on
//!   (the merge base of the buffer sync; the served texts in `state` are
//!   the agent's side);
//! - `checkpoints`: per turn, the agent's steps on each file, to put the
//!   files back to before any turn;
//! - `kept`: the file texts kept in memory, under one cap;
//! - `review`: what review compares a changed file with (the agent's steps
//!   taken back, the user's edits kept) and the records as JSON;
//! - `write_merge`: an agent write into a file that changed on disk while
//!   the agent worked, merged with the disk change or refused.
//!
//! May use: protocol, runtime, bridge, model, config, platform, log.

pub mod agreed;
pub mod checkpoints;
pub mod confine;
pub mod files;
pub mod fs;
pub mod fs_error;
pub mod handlers;
pub mod kept;
pub mod policy;
pub mod review;
pub mod roots;
pub mod state;
pub mod terminal;
pub mod write_merge;
