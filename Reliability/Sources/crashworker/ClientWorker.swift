import RocalyticsClient
import RocalyticsClientTestSupport
import TrackerCore

/// `client-purchase` (issue 37, item 2): a Rocalytics client on a returning device (the fixture
/// platform, one roca id at every launch) over libcurl to the harness's server, with its recorded
/// requests in file storage in the directory. Records one purchase (`recordPurchase`), prints
/// `P 1` once its write has finished, then keeps delivering until killed. In `drain` mode it
/// records nothing: it delivers what is stored. `client-journey` records an identify
/// (`recordIdentify(userId: "fan-77")`) before the purchase.
enum ClientWorker {
    static let transaction = "2000000999"

    static func run(directory: String, url: String, drain: Bool, journey: Bool = false) async {
        let printer = Diagnostics.consolePrinter(prefix: "rocalytics-sdk")
        let store = InMemorySecureStore([ROCA_ID_KEY: "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f", INSTALL_TRACKED_KEY: "true"])
        let client = RocalyticsClient(
            configuration: RocalyticsConfiguration(
                platform: .custom(FixturePlatform.ios(store: store)), baseURL: url,
                onDiagnostic: { d in
                    Out.line("D \(d.code)")
                    printer(d)
                },
                installPing: false, storage: FileKeyValueStorage(directory: directory)))
        await client.ready()
        Out.line(WorkerLine.ready)
        if !drain {
            if journey {
                client.recordIdentify(userId: "fan-77")  // a sign-in, then a purchase: both stored, sent in order
            }
            record(client)
            await client.storageIdle()
            Out.line("P 1")
        }
        // The client delivers while it lives: keep it until the harness kills the process.
        Out.line(WorkerLine.end)
        while true { await Parking.park() }
    }

    static func record(_ client: RocalyticsClient) {
        client.recordPurchase(
            originalTransactionIdentifier: transaction, productId: "pro_yearly", price: 49.99, currency: "EUR")
    }
}
