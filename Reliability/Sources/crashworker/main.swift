import TrackerCore

// The crash worker: a stand-in app process that the crash-durability harness kills with SIGKILL
// at random moments and restarts on the same directory.
//
// Usage: crashworker <onboarding|paywall|paywall-end|score|score-reclaim|mixed|client-purchase|client-journey> <directory> <server base URL> <seed> <steps> [drain]
//
// It records through one tracker into durable storage in <directory>, sends to the harness's
// loopback server (real clock, system scheduler), and prints one line per persist point on
// standard output (see `Protocol.swift`). In `drain` mode it records nothing new: it restores
// what is stored, delivers it, and waits to be killed.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 6, let seed = UInt64(arguments[4]), let steps = Int(arguments[5]) else {
    Out.line("usage: crashworker <onboarding|paywall|score> <directory> <url> <seed> <steps> [drain]")
    exit(2)
}
let mode = arguments[1]
let directory = arguments[2]
let baseURL = arguments[3]
let drain = arguments.count > 6 && arguments[6] == "drain"
signal(SIGPIPE, SIG_IGN)

switch mode {
case "onboarding":
    await OnboardingWorker.run(directory: directory, url: baseURL, seed: seed, steps: steps, drain: drain)
case "paywall":
    await PaywallWorker.run(directory: directory, url: baseURL, seed: seed, steps: steps, drain: drain)
case "paywall-end":
    await PaywallEndWorker.run(directory: directory, url: baseURL)
case "score":
    await ScoreWorker.run(directory: directory, url: baseURL, seed: seed, steps: steps, drain: drain)
case "client-purchase":
    await ClientWorker.run(directory: directory, url: baseURL, drain: drain)
case "client-journey":
    await ClientWorker.run(directory: directory, url: baseURL, drain: drain, journey: true)
case "mixed":
    await MixedWorker.run(directory: directory, url: baseURL, seed: seed, steps: steps, drain: drain)
case "score-reclaim":
    await ScoreReclaimWorker.run(directory: directory, url: baseURL, seed: seed, steps: steps, drain: drain)
default:
    Out.line("unknown mode \(mode)")
    exit(2)
}
Out.line(WorkerLine.end)
// Stay alive (timers and deliveries keep running) until the harness kills the process.
while true {
    await Parking.park()
}
