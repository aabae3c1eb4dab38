// Code generators (filled in by the contract-types work).
print("codegen: nothing to generate yet")
