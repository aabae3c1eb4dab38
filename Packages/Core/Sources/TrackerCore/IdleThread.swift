import CTrackerCurlShim

/// One closure run on a thread of its own at the lowest priority, which ends with it: work that
/// may run beside the caller's when a processor is free, and must never take one from the app
/// (background quality of service on Apple platforms, nice 19 on Linux). Pair it with a way for
/// the caller to do the work itself when it needs the result before the thread has started (a
/// thread at this priority may wait long for a processor on a busy device).
public enum IdleThread {
    /// Runs `body` on a new thread named `name` at the lowest priority. `false` when no thread
    /// could be created: `body` is not run.
    @discardableResult
    public static func run(named name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        NativeThread.spawn(.lowest) {
            ctracker_name_current_thread(name)
            body()
        } == 0
    }
}
