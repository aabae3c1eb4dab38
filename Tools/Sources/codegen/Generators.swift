/// Every generator of the repository. Each lives in its own file.
func allGenerators() -> [any Generator] {
    [
        ContractTypesGenerator(),
        ScoreEventsGenerator(),
    ]
}
