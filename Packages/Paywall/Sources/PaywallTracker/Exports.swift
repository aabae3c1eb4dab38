@_exported import PaywallObserverAPI
