// A Rust program's allocations go through the __rust_alloc shims: with the default global
// allocator they end in the system's malloc, with a #[global_allocator] (built with
// --cfg bump: a bump allocator on a static arena, no malloc at all) they never reach a
// malloc.  Each phase makes a known number of allocations of known sizes; the `expect`
// lines carry the figures the epoch must show (test/t_rust_alloc.sh).
use std::os::raw::{c_char, c_void};

extern "C" {
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
}

#[cfg(bump)]
mod bump {
    use std::alloc::{GlobalAlloc, Layout};
    use std::sync::atomic::{AtomicUsize, Ordering};

    const ARENA: usize = 64 << 20;
    #[repr(align(4096))]
    struct Arena(std::cell::UnsafeCell<[u8; ARENA]>);
    unsafe impl Sync for Arena {}
    static MEMORY: Arena = Arena(std::cell::UnsafeCell::new([0; ARENA]));
    static USED: AtomicUsize = AtomicUsize::new(0);

    pub struct Bump;
    unsafe impl GlobalAlloc for Bump {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let mut at = USED.load(Ordering::Relaxed);
            loop {
                let start = (at + layout.align() - 1) & !(layout.align() - 1);
                let end = start + layout.size();
                if end > ARENA {
                    return std::ptr::null_mut();
                }
                match USED.compare_exchange(at, end, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return (MEMORY.0.get() as *mut u8).add(start),
                    Err(now) => at = now,
                }
            }
        }
        unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
    }
}

#[cfg(bump)]
#[global_allocator]
static GLOBAL: bump::Bump = bump::Bump;

// Keeps the optimizer from eliding an allocation it can see unused (black_box is unstable
// in Debian's rustc).
#[inline(never)]
fn opaque<T>(x: T) -> T {
    let copy = unsafe { std::ptr::read_volatile(&x) };
    std::mem::forget(x);
    copy
}

fn epoch() -> u64 {
    let f = unsafe { dlsym(std::ptr::null_mut(), b"churn_epoch\0".as_ptr() as *const c_char) };
    if f.is_null() {
        return 0;
    }
    let f: extern "C" fn() -> u64 = unsafe { std::mem::transmute(f) };
    f()
}

fn main() {
    let mut phases: Vec<(&str, u64)> = Vec::with_capacity(8);
    let mut keep: Vec<Vec<u8>> = Vec::with_capacity(1000);

    phases.push(("vectors", epoch()));
    for i in 0..1000 {
        let mut v: Vec<u8> = Vec::with_capacity(4096);
        v.push(i as u8);
        keep.push(opaque(v));
    }
    keep.clear();

    phases.push(("boxes", epoch()));
    for i in 0..500u64 {
        let b = opaque(Box::new([i; 6]));
        drop(b);
    }

    phases.push(("grow", epoch()));
    for _ in 0..50 {
        let mut v: Vec<u8> = Vec::with_capacity(100);
        v.resize(100, 1);
        v.reserve_exact(900);
        opaque(&v);
    }
    phases.push(("end", epoch()));

    for (name, e) in &phases {
        println!("phase {} {}", name, e);
    }
    println!("expect vectors 1000 1000 4096000 4096000 0 0");
    println!("expect boxes 500 500 24000 24000 0 0");
    println!("expect grow 100 100 55000 55000 0 0");
}
