// Wire encoding benchmark cases (filled in by the wire JSON work).
func wireBenchCases() -> [BenchCase] { [] }
