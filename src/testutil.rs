//! Test-only helpers shared by the unit tests of several modules.

use std::fs;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("acp-test-{name}-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `text` to `rel` under the directory, creating parents.
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.0.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Test-only: bytes allocated by the current thread, to show that a
/// bounded operation stays bounded. Counting is per thread, so tests
/// running in parallel do not disturb each other.
pub mod alloc_meter {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    struct Counting;

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    fn add(n: isize) {
        let _ = LIVE.try_with(|live| {
            let v = live.get() + n;
            live.set(v);
            let _ = PEAK.try_with(|p| {
                if v > p.get() {
                    p.set(v)
                }
            });
        });
    }

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            add(l.size() as isize);
            unsafe { System.alloc(l) }
        }
        unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
            add(l.size() as isize);
            unsafe { System.alloc_zeroed(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            add(-(l.size() as isize));
            unsafe { System.dealloc(p, l) }
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
            add(new as isize - l.size() as isize);
            unsafe { System.realloc(p, l, new) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Peak of this thread's live heap bytes since `start`, above what was
    /// live at `start`.
    pub struct Meter {
        base: isize,
    }

    impl Meter {
        pub fn start() -> Self {
            let base = LIVE.with(Cell::get);
            PEAK.with(|p| p.set(base));
            Meter { base }
        }

        pub fn peak(&self) -> usize {
            (PEAK.with(Cell::get) - self.base).max(0) as usize
        }
    }
}

/// A slow pipe: takes at most `step` bytes a write and is full (`Pending`,
/// waking itself) every other time it is asked. What it took is in `out`.
pub struct Trickle {
    pub out: Vec<u8>,
    step: usize,
    full: bool,
}

impl Trickle {
    pub fn new(step: usize) -> Self {
        Self {
            out: Vec::new(),
            step,
            full: false,
        }
    }
}

impl tokio::io::AsyncWrite for Trickle {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.full = !self.full;
        if self.full {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let n = buf.len().min(self.step);
        self.out.extend_from_slice(&buf[..n]);
        Poll::Ready(Ok(n))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
