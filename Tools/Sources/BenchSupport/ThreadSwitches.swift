/// Voluntary context switches made between two samples of a process's threads, summed by thread
/// name.
///
/// Both samples are keyed by thread id, never by name: several threads share a name (Dispatch's
/// workers, the process's own), and a thread that ends inside the window takes its count with
/// it, so sums by name taken before and after can even go down. A thread seen in both samples
/// counts its difference, one born inside the window all of its switches; threads that ended
/// inside the window are counted in `ended` (their last switches are gone with them).
///
/// - Parameters:
///   - before: switches so far, by thread id, when the window opened.
///   - after: name and switches so far, by thread id, when it closed.
public func switchesBetween(
    _ before: [Int: Int], _ after: [Int: (name: String, switches: Int)]
) -> (byName: [String: Int], ended: Int) {
    var byName: [String: Int] = [:]
    for (tid, sample) in after {
        byName[sample.name, default: 0] += sample.switches - (before[tid] ?? 0)
    }
    let ended = before.keys.filter { after[$0] == nil }.count
    return (byName, ended)
}
