import TrackerCore

// Links TrackerCore only: its wire encoder and lifecycle monitor are in the binary.
print(WireJSON.encodeString(["core": .string(String(describing: AppLifecycleMonitor.self))]))
