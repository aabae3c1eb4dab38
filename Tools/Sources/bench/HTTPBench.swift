// HTTP transport benchmark cases (filled in by the transport work).
func httpBenchCases() -> [BenchCase] { [] }
