//! The agent side: one agent process per connection and the ACP traffic
//! over its stdio. A connection parses what the agent sends once, routes
//! each session's traffic to the chat that owns it (a `SessionSink`), and
//! holds the agent's read loop while the view is far behind.
//!
//! - `connection`: a connection's state: routes, the bookkeeping of the
//!   traffic, the process group it may signal;
//! - `process`: starting the agent, its stderr, its exit report;
//! - `dispatch`: reading the agent's stdout, the ACP SDK's handlers, and
//!   routing updates and requests to their session;
//! - `inbound`: what the agent sent, classified and typed (`AgentRequest`);
//! - `framing`: bounded line reads of the agent's stdout;
//! - `trace`: each connection's traffic, for `:AcpTrace`;
//! - `procs`: process identity (a reaped pid is not ours any more);
//! - `elicitation`: the agent's forms and URLs waiting for the user;
//! - `media`: the agent's images and audio, saved to files;
//! - `text_chunk`: the stream's plain text chunks, read in one typed pass;
//! - `splice`: large strings of the client's answers, escaped once and
//!   written without the SDK's copy.
//!
//! May use: bridge, model, config, platform, log, redact.

pub mod connection;
mod dispatch;
pub mod elicitation;
pub mod framing;
#[cfg(test)]
mod fuzz;
pub mod inbound;
pub mod media;
pub mod process;
pub mod procs;
pub mod splice;
pub mod text_chunk;
pub mod trace;
