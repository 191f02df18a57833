//! The one crossing from background threads to Neovim's main thread.
//!
//! Producers (tokio tasks) push `UiEvent`s into a queue and poke a libuv
//! async handle. Its callback only schedules a drain with `vim.schedule`:
//! calling the API inside the libuv callback itself can re-enter the loop
//! and abort Neovim. Nothing is dropped; producers that run far ahead wait
//! (asynchronously) until the main thread catches up.
//!
//! - `queue`: the events waiting for the main thread, merged while they
//!   wait and sliced per drain;
//! - `handoff`: the shared queue (`bridge()`), the wake-ups and the
//!   back-pressure;
//! - `pacing`: how long a frame is and how much one drain may take;
//! - `main_call` and `calls`: requests to the main thread that need an
//!   answer (a buffer's text, an edit, a job), and their pending answers;
//! - `drain`: the main-thread side (the wake-up, the drain, `catch`);
//! - `lua_tables`: the Lua tables the view's dispatcher gets.
//!
//! May use: model, log.

pub mod calls;
pub mod drain;
pub mod handoff;
pub mod lua_tables;
pub mod main_call;
pub mod pacing;
pub mod queue;
