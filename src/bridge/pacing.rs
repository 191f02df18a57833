//! Frame pacing of the bridge: when the main thread may be woken next, and
//! how much one drain may take. Pure policy on explicit instants (the bridge
//! feeds it the clock), so it is unit-tested without Neovim.
//!
//! - The first event after a quiet period wakes Neovim at once (low latency).
//! - While a stream lasts, Neovim is woken at most once per frame; everything
//!   that arrived in between is drained in one go, so a view makes one edit
//!   per message per frame.
//! - A frame lasts at least `MIN_FRAME`. It stretches (up to `MAX_FRAME`)
//!   when rendering frames costs the main thread more than `RENDER_SHARE` of
//!   the frame: the redraw, Tree-sitter re-parsing of the transcript and the
//!   UI all run between two drains, and re-parsing grows with the size of
//!   the document, not with the size of the edit. The cost is the cheapest
//!   of the last few frames: one-off work (a command the user ran) does not
//!   slow the stream down, and frames shorten as soon as rendering gets
//!   cheap again (e.g. the view paused highlighting during a flood).
//! - One drain takes at most `budget()` bytes, sized from the measured
//!   throughput of earlier drains to stay near `DRAIN_TARGET`; the rest waits
//!   (never dropped), so Neovim redraws between slices. A drain that left
//!   events behind (a backlog: the agent outran a frame's budget) is
//!   followed after `BACKLOG_GAP`, or twice the frame's measured rendering,
//!   not at the next frame: the loop still runs its timers, input and redraw
//!   between slices, but does not sit idle while text waits.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Shortest frame (about one 60 Hz refresh).
pub const MIN_FRAME: Duration = Duration::from_millis(16);
/// Longest frame: the screen is updated at least this often while a stream
/// lasts: 20 ms plus a drain and a redraw stays under 33 ms between screen
/// updates (measured: a redraw of the chat with Tree-sitter highlighting
/// takes 1-10 ms).
pub const MAX_FRAME: Duration = Duration::from_millis(20);
/// Main-thread time one drain aims to stay under.
pub const DRAIN_TARGET: Duration = Duration::from_millis(8);
/// Share of the main thread that rendering between two drains may use
/// before frames get longer. Without highlighting a frame renders in under
/// 1 ms (16 ms frames); Tree-sitter markdown costs 1-3 ms per frame on the
/// live entry (frames stretch to `MAX_FRAME`).
pub const RENDER_SHARE: f64 = 0.05;

/// Least time between the end of a drain that left a backlog and the next
/// one: room for the loop's timers, input and redraw.
pub const BACKLOG_GAP: Duration = Duration::from_millis(2);

/// Frames whose rendering cost is remembered (the cheapest counts).
const RENDER_SAMPLES: usize = 3;
const MIN_BUDGET: usize = 32 * 1024;
const MAX_BUDGET: usize = 8 * 1024 * 1024;
/// Before any drain was measured (a new Neovim's first large turn): 256 KiB
/// took 10-15 ms of a 5 MB answer's first drain, 128 KiB stays near 5.
const START_BUDGET: usize = 128 * 1024;
/// Drains smaller than this say little about throughput.
const MIN_SAMPLE_BYTES: usize = 16 * 1024;

/// What to do about an event queued while no drain is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Wake the main thread now.
    Now,
    /// Wake it at this instant (the start of the next frame).
    At(Instant),
    /// A wake-up is already on its way.
    Pending,
}

/// A wake-up on its way to the main thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    None,
    Now,
    /// At a frame's end (or after a backlog's gap).
    At(Instant),
}

#[derive(Debug)]
pub struct Pacer {
    frame: Duration,
    /// Start of the last drain.
    last_start: Option<Instant>,
    /// End of the last drain, with the main thread's CPU clock then.
    last_end: Option<(Instant, Duration)>,
    /// The wake-up requested since the last drain started, if any.
    pending: Pending,
    /// Main-thread CPU spent between two drains (rendering), last frames.
    render: VecDeque<Duration>,
    /// Smoothed drain throughput, bytes per millisecond.
    bytes_per_ms: Option<f64>,
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new()
    }
}

impl Pacer {
    pub fn new() -> Self {
        Self {
            frame: MIN_FRAME,
            last_start: None,
            last_end: None,
            pending: Pending::None,
            render: VecDeque::with_capacity(RENDER_SAMPLES),
            bytes_per_ms: None,
        }
    }

    /// The current frame length (tests).
    #[cfg(test)]
    pub fn frame(&self) -> Duration {
        self.frame
    }

    /// An event was queued and no drain is scheduled. An `urgent` one (the
    /// core waits for its answer, or a turn ended) wakes the main thread now
    /// even inside a frame, also when a wake-up at the frame's end is on its
    /// way.
    pub fn on_event(&mut self, now: Instant, urgent: bool) -> Wake {
        match self.pending {
            Pending::Now => return Wake::Pending,
            Pending::At(_) if !urgent => return Wake::Pending,
            _ => {}
        }
        match self.last_start {
            Some(start) if !urgent && now < start + self.frame => {
                self.pending = Pending::At(start + self.frame);
                Wake::At(start + self.frame)
            }
            _ => {
                self.pending = Pending::Now;
                Wake::Now
            }
        }
    }

    /// A drain starts. `cpu` is the main thread's CPU clock. Returns the
    /// byte budget of this drain.
    pub fn begin(&mut self, now: Instant, cpu: Duration) -> usize {
        // Main-thread CPU since the previous drain ended: the redraw and
        // highlighting of that frame (and whatever else ran). Only counted
        // while a stream lasts; after a pause frames start short again.
        let streaming = self
            .last_end
            .filter(|(end, _)| now.saturating_duration_since(*end) <= 2 * MAX_FRAME);
        match streaming {
            Some((_, cpu_end)) => {
                if self.render.len() == RENDER_SAMPLES {
                    self.render.pop_front();
                }
                self.render.push_back(cpu.saturating_sub(cpu_end));
            }
            None => self.render.clear(),
        }
        self.frame = self
            .render_cost()
            .div_f64(RENDER_SHARE)
            .clamp(MIN_FRAME, MAX_FRAME);
        self.last_start = Some(now);
        self.pending = Pending::None;
        self.budget()
    }

    /// Main-thread cost of rendering a frame: the cheapest of the last
    /// frames (zero until there are enough).
    pub fn render_cost(&self) -> Duration {
        if self.render.len() < RENDER_SAMPLES {
            return Duration::ZERO;
        }
        self.render.iter().copied().min().unwrap_or_default()
    }

    /// Bytes one drain may take.
    pub fn budget(&self) -> usize {
        match self.bytes_per_ms {
            Some(rate) => ((rate * DRAIN_TARGET.as_secs_f64() * 1000.0) as usize)
                .clamp(MIN_BUDGET, MAX_BUDGET),
            None => START_BUDGET,
        }
    }

    /// A drain delivered `bytes` in `elapsed`; `remaining` says whether the
    /// queue still holds events, `behind` whether the budget left some of
    /// those it found (not only events that came during the drain).
    /// Returns the instant of the next wake-up when one is needed and none
    /// is pending.
    pub fn end(
        &mut self,
        now: Instant,
        cpu: Duration,
        bytes: usize,
        elapsed: Duration,
        remaining: bool,
        behind: bool,
    ) -> Option<Instant> {
        if bytes >= MIN_SAMPLE_BYTES {
            let ms = (elapsed.as_secs_f64() * 1000.0).max(0.05);
            let rate = bytes as f64 / ms;
            self.bytes_per_ms = Some(match self.bytes_per_ms {
                // Slower drains count at once, faster ones gradually.
                Some(old) if rate > old => (old * 3.0 + rate) / 4.0,
                _ => rate,
            });
        }
        self.last_end = Some((now, cpu));
        if remaining && self.pending == Pending::None {
            let start = self.last_start.unwrap_or(now);
            let frame_end = start + self.frame;
            let at = if behind {
                let gap = BACKLOG_GAP.max(self.render_cost() * 2);
                (now + gap).min(frame_end)
            } else {
                frame_end
            };
            self.pending = Pending::At(at);
            return Some(at);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn first_event_wakes_at_once_then_once_per_frame() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        assert_eq!(p.on_event(t0, false), Wake::Now);
        // Until the drain starts, further events ride on that wake-up.
        assert_eq!(p.on_event(t0 + ms(1), false), Wake::Pending);
        p.begin(t0 + ms(1), ms(0));
        assert_eq!(p.end(t0 + ms(2), ms(1), 100, ms(1), false, false), None);
        // An event 5 ms later waits for the next frame.
        assert_eq!(
            p.on_event(t0 + ms(6), false),
            Wake::At(t0 + ms(1) + MIN_FRAME)
        );
        assert_eq!(p.on_event(t0 + ms(7), false), Wake::Pending);
        p.begin(t0 + ms(17), ms(1));
        p.end(t0 + ms(18), ms(2), 100, ms(1), false, false);
        // After a quiet period the next event goes at once again.
        assert_eq!(p.on_event(t0 + ms(500), false), Wake::Now);
    }

    #[test]
    fn an_urgent_event_wakes_at_once_inside_a_frame() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        p.on_event(t0, false);
        p.begin(t0, ms(0));
        p.end(t0 + ms(1), ms(1), 100, ms(1), false, false);
        // Text waits for the frame's end; a call the core waits on does not,
        // also when the wake-up at the frame's end is already on its way.
        assert_eq!(p.on_event(t0 + ms(2), false), Wake::At(t0 + MIN_FRAME));
        assert_eq!(p.on_event(t0 + ms(3), true), Wake::Now);
        // That wake-up covers what comes until the drain starts.
        assert_eq!(p.on_event(t0 + ms(4), true), Wake::Pending);
        assert_eq!(p.on_event(t0 + ms(4), false), Wake::Pending);
        // A drain that left events asks for the frame's end: an urgent
        // event does not wait for it either.
        p.begin(t0 + ms(5), ms(1));
        assert_eq!(
            p.end(t0 + ms(6), ms(2), 100, ms(1), true, false),
            Some(t0 + ms(5) + MIN_FRAME)
        );
        assert_eq!(p.on_event(t0 + ms(7), true), Wake::Now);
    }

    #[test]
    fn leftovers_wait_for_the_next_frame() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        p.on_event(t0, false);
        p.begin(t0, ms(0));
        assert_eq!(
            p.end(t0 + ms(8), ms(8), 1 << 20, ms(8), true, false),
            Some(t0 + MIN_FRAME)
        );
        // The wake-up for the rest is pending: events do not add another.
        assert_eq!(p.on_event(t0 + ms(9), false), Wake::Pending);
    }

    #[test]
    fn a_backlog_is_drained_after_a_short_gap_not_at_the_next_frame() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        p.on_event(t0, false);
        p.begin(t0, ms(0));
        // The budget left events it found: the next slice comes after the
        // gap, well before the frame ends.
        assert_eq!(
            p.end(t0 + ms(8), ms(8), 1 << 20, ms(8), true, true),
            Some(t0 + ms(8) + BACKLOG_GAP)
        );
        assert_eq!(p.on_event(t0 + ms(9), false), Wake::Pending);
        // Expensive rendering widens the gap (twice its cost), never past
        // the frame's end.
        let mut t = t0 + ms(8) + BACKLOG_GAP;
        let mut cpu = ms(8);
        for _ in 0..RENDER_SAMPLES {
            cpu += ms(3);
            p.begin(t, cpu);
            t += ms(1);
            cpu += ms(1);
            p.end(t, cpu, 100, ms(1), false, false);
            t += ms(3);
        }
        cpu += ms(3);
        let start = t;
        p.begin(start, cpu);
        let end = start + ms(4);
        assert_eq!(p.render_cost(), ms(3));
        assert_eq!(
            p.end(end, cpu + ms(4), 1 << 20, ms(4), true, true),
            Some((end + ms(6)).min(start + p.frame()))
        );
    }

    #[test]
    fn budget_follows_measured_throughput() {
        let t0 = Instant::now();
        let mut p = Pacer::new();
        assert_eq!(p.budget(), START_BUDGET);
        p.begin(t0, ms(0));
        // 1 MB in 4 ms: 250 KB/ms, so 8 ms is about 2 MB.
        p.end(t0 + ms(4), ms(4), 1_000_000, ms(4), false, false);
        assert_eq!(p.budget(), 2_000_000);
        // A slow drain lowers the budget at once.
        p.begin(t0 + ms(20), ms(5));
        p.end(t0 + ms(40), ms(25), 100_000, ms(20), false, false);
        assert_eq!(p.budget(), 40_000);
        // Tiny drains are no evidence.
        p.begin(t0 + ms(60), ms(26));
        p.end(t0 + ms(61), ms(27), 10, ms(1), false, false);
        assert_eq!(p.budget(), 40_000);
        // Never below the floor.
        p.begin(t0 + ms(80), ms(28));
        p.end(
            t0 + ms(180),
            ms(128),
            MIN_SAMPLE_BYTES,
            ms(100),
            false,
            false,
        );
        assert_eq!(p.budget(), MIN_BUDGET);
    }

    /// Runs `n` frames `gap` apart whose rendering costs `cost` each.
    fn frames(
        p: &mut Pacer,
        t: &mut Instant,
        cpu: &mut Duration,
        n: usize,
        gap: Duration,
        cost: Duration,
    ) {
        for _ in 0..n {
            *t += gap;
            *cpu += cost;
            p.begin(*t, *cpu);
            *t += ms(1);
            *cpu += ms(1);
            p.end(*t, *cpu, 100, ms(1), false, false);
        }
    }

    #[test]
    fn expensive_rendering_stretches_frames_up_to_the_maximum() {
        let mut t = Instant::now();
        let mut cpu = ms(0);
        let mut p = Pacer::new();
        frames(&mut p, &mut t, &mut cpu, 1, ms(0), ms(0));
        assert_eq!(p.frame(), MIN_FRAME);
        // Expensive frames now and then (the user ran something) change nothing.
        frames(&mut p, &mut t, &mut cpu, 1, ms(16), ms(40));
        frames(
            &mut p,
            &mut t,
            &mut cpu,
            1,
            ms(16),
            Duration::from_micros(500),
        );
        frames(&mut p, &mut t, &mut cpu, 1, ms(16), ms(40));
        frames(&mut p, &mut t, &mut cpu, 1, ms(16), ms(30));
        assert_eq!(p.frame(), MIN_FRAME);
        // Steady 0.9 ms of rendering per frame: 0.9 / 0.05 = 18 ms frames.
        frames(
            &mut p,
            &mut t,
            &mut cpu,
            3,
            ms(16),
            Duration::from_micros(900),
        );
        assert_eq!(p.frame(), ms(18));
        // 20 ms per frame: capped.
        frames(&mut p, &mut t, &mut cpu, 3, ms(30), ms(20));
        assert_eq!(p.frame(), MAX_FRAME);
        // One cheap frame brings it back down at once.
        frames(
            &mut p,
            &mut t,
            &mut cpu,
            1,
            ms(40),
            Duration::from_micros(500),
        );
        assert_eq!(p.frame(), MIN_FRAME);
        // After a pause, the cost is forgotten.
        frames(&mut p, &mut t, &mut cpu, 3, ms(16), ms(20));
        assert_eq!(p.frame(), MAX_FRAME);
        frames(&mut p, &mut t, &mut cpu, 1, ms(1000), ms(20));
        assert_eq!(p.frame(), MIN_FRAME);
    }
}
