// The layout tables: one `ContractLayout` per generated file, in wire key order (checked against its
// schema by `LayoutCheck.swift` before anything is rendered).

enum ContractLayouts {
    static let all: [ContractLayout] = [onboarding, paywallV1, paywallV1_1]

    static let onboarding = ContractLayout(
        schemaFile: "onboarding-run.schema.json",
        outputFile: "OnboardingRunSnapshot.swift",
        rootName: "OnboardingRunSnapshot",
        rootDoc: "One send of an onboarding run, contract schema_version 1 (<doc:OnboardingRunContract>).",
        structs: [
            StructLayout(
                name: "OnboardingRunSnapshot",
                doc: "One send of an onboarding run, contract schema_version 1 (<doc:OnboardingRunContract>).",
                schemaPath: [],
                fields: [
                    Field("run_id", .string, .required, "Client-minted lowercase UUID, one per run."),
                    Field("seq", .int, .required, "Send counter: 1 first, strictly greater on every later send."),
                    Field("status", .enumeration("OnboardingRunSnapshot.Status"), .required, "Run status."),
                    Field("started_at", .string, .required, "Timestamp of the first entry."),
                    Field("completed_at", .string, .nullable, "Completion timestamp; `null` while in progress."),
                    Field("sent_at", .string, .required, "Client clock when the snapshot was sent."),
                    Field("onboarding", .structure("OnboardingRunSnapshot.Onboarding"), .required, "Flow identity."),
                    Field("studio", .structure("OnboardingRunSnapshot.Studio"), .optional, "Studio links; omitted when none is set."),
                    Field("context", .structure("OnboardingRunSnapshot.Context"), .required, "Device and app context, fixed at run start."),
                    Field("manifest", .structure("OnboardingRunSnapshot.Manifest"), .required, "Every step the flow can show."),
                    Field("properties", .scalarMap, .nonEmptyOrAbsent, "Run properties in insertion order; omitted when empty."),
                    Field("truncated", .bool, .trueOrAbsent, "Whether recording stopped at a limit; written only when `true`."),
                    Field("steps", .array(.structure("OnboardingRunSnapshot.Entry")), .required, "Screens shown, in display order."),
                ],
                schemaVersion: .constant("1")
            ),
            StructLayout(
                name: "OnboardingRunSnapshot.Onboarding", doc: "The flow's identity (<doc:OnboardingRunContract#Identity>).",
                schemaPath: ["properties", "onboarding"],
                fields: [
                    Field("key", .string, .required, "Stable key of the flow."),
                    Field("version", .string, .required, "The flow's revision."),
                    Field("variant_key", .string, .optional, "In-flow variant; omitted when not in such a test."),
                ]),
            StructLayout(
                name: "OnboardingRunSnapshot.Studio",
                doc: "Links to Studio records (<doc:OnboardingRunContract#Studio-links>); only links with a value are written.",
                schemaPath: ["properties", "studio"],
                fields: [
                    Field("onboarding_id", .string, .optional, "Studio onboarding record."),
                    Field("deployment_id", .string, .optional, "Studio deployment record."),
                    Field("audience_id", .string, .optional, "Studio audience record."),
                    Field("variant_key", .string, .optional, "The Studio variant served (`main` or a variant key)."),
                ]),
            StructLayout(
                name: "OnboardingRunSnapshot.Context",
                doc: "Device and app context (<doc:OnboardingRunContract#Context>); `build` and `os_version` are always written.",
                schemaPath: ["properties", "context"],
                fields: [
                    Field("app_version", .string, .required, "Marketing version."),
                    Field("build", .string, .nullable, "Build number, `null` when unknown."),
                    Field("platform", .enumeration("OnboardingRunSnapshot.Platform"), .required, "Platform."),
                    Field("os_version", .string, .nullable, "OS version, `null` when unknown."),
                    Field("locale", .string, .required, "BCP 47 language tag."),
                    Field("timezone", .string, .required, "IANA time zone name."),
                    Field("library_version", .string, .optional, "Version of the tracker library."),
                ]),
            StructLayout(
                name: "OnboardingRunSnapshot.Manifest",
                doc: "Every step the flow can show, in flow order (<doc:OnboardingRunContract#Manifest>).",
                schemaPath: ["properties", "manifest"],
                fields: [
                    Field("steps", .array(.structure("OnboardingRunSnapshot.ManifestStep")), .required, "The steps.")
                ]),
            StructLayout(
                name: "OnboardingRunSnapshot.ManifestStep", doc: "One manifest step; steps sharing a `slot` are alternatives.",
                schemaPath: ["properties", "manifest", "properties", "steps", "items"],
                fields: [
                    Field("step_key", .string, .required, "Step key, unique in the manifest."),
                    Field("slot", .string, .optional, "Slot shared by alternative steps."),
                ]),
            StructLayout(
                name: "OnboardingRunSnapshot.Entry", doc: "One display of a step (<doc:OnboardingRunContract#Entries>).",
                schemaPath: ["$defs", "entry"],
                fields: [
                    Field("step_key", .string, .required, "The step shown."),
                    Field("entered_at", .string, .required, "When it was shown."),
                    Field("exited_at", .string, .nullable, "When the user left it; `null` while open."),
                    Field("answers", .array(.answer("OnboardingRunSnapshot.Answer")), .required, "Answers given on this visit."),
                ]),
        ],
        enums: [
            EnumLayout(name: "OnboardingRunSnapshot.Status", doc: "Run status.", schemaPath: ["properties", "status"]),
            EnumLayout(
                name: "OnboardingRunSnapshot.Platform", doc: "Platform of the device.",
                schemaPath: ["properties", "context", "properties", "platform"]),
        ],
        answer: AnswerLayout(name: "OnboardingRunSnapshot.Answer", schemaPath: ["$defs", "answer"])
    )

    static let paywallV1 = ContractLayout(
        schemaFile: "paywall-presentation.schema.json",
        outputFile: "PaywallPresentationSnapshot.swift",
        rootName: "PaywallPresentationSnapshot",
        rootDoc: "",
        structs: paywallCommonStructs(prefix: "PaywallPresentationSnapshot", schemaVersion: .constant("1")) + [
            StructLayout(
                name: "PaywallPresentationSnapshot.Paywall", doc: "The paywall shown (<doc:PaywallPresentationContract#Paywall>).",
                schemaPath: ["properties", "paywall"],
                fields: [
                    Field("moment_key", .string, .required, "The moment that resolved to the paywall."),
                    Field("paywall_id", .string, .required, "Paywall id."),
                    Field("audience_id", .string, .nullable, "Audience id; `null` when the catalog carried none."),
                    Field("render_mode", .enumeration("PaywallPresentationSnapshot.RenderMode"), .required, "How the paywall is rendered."),
                    Field("billing", .enumeration("PaywallPresentationSnapshot.Billing"), .required, "Billing channel."),
                    Field("variant_key", .string, .optional, "Variant key, when the input has one."),
                    Field("deployment_id", .string, .optional, "Deployment id, when the input has one."),
                ])
        ],
        enums: paywallCommonEnums(prefix: "PaywallPresentationSnapshot") + [
            EnumLayout(
                name: "PaywallPresentationSnapshot.RenderMode", doc: "How the paywall is rendered.",
                schemaPath: ["properties", "paywall", "properties", "render_mode"]),
            EnumLayout(
                name: "PaywallPresentationSnapshot.Billing", doc: "Billing channel.",
                schemaPath: ["properties", "paywall", "properties", "billing"]),
        ]
    )

    static let paywallV1_1 = ContractLayout(
        schemaFile: "paywall-presentation.v1_1.schema.json",
        outputFile: "PaywallPresentationSnapshotV1_1.swift",
        rootName: "PaywallPresentationSnapshotV1_1",
        rootDoc: "",
        structs: [
            paywallRoot(
                prefix: "PaywallPresentationSnapshotV1_1", nested: "PaywallPresentationSnapshot", schemaVersion: .paywallProvider,
                doc:
                    "One send of a paywall presentation, contract v1.1 (<doc:PaywallPresentationContract#Contract-v1.1>): `schema_version` is `1.1` when `paywall.provider` is set and `1` otherwise, and a snapshot without a provider is byte for byte the v1 snapshot."
            ),
            StructLayout(
                name: "PaywallPresentationSnapshotV1_1.Paywall",
                doc:
                    "The paywall shown, v1.1 (<doc:PaywallPresentationContract#Contract-v1.1>): with a provider the v1 members are optional.",
                schemaPath: ["properties", "paywall"],
                fields: [
                    Field(
                        "provider", .enumeration("PaywallPresentationSnapshotV1_1.Provider"), .optional,
                        "Who serves the paywall; omitted for a Studio paywall (v1)."),
                    Field("provider_name", .string, .optional, "Free text naming the third-party service."),
                    Field("placement", .string, .optional, "Placement of an external paywall."),
                    Field("external_paywall_id", .string, .optional, "The provider's paywall id."),
                    Field("moment_key", .string, .optional, "The moment that resolved to the paywall."),
                    Field("paywall_id", .string, .optional, "Paywall id."),
                    Field("audience_id", .string, .optionalNullable, "Audience id: omitted, `null` (no audience) or a value."),
                    Field("render_mode", .enumeration("PaywallPresentationSnapshot.RenderMode"), .optional, "How the paywall is rendered."),
                    Field("billing", .enumeration("PaywallPresentationSnapshot.Billing"), .optional, "Billing channel."),
                    Field("variant_key", .string, .optional, "Variant key, when the input has one."),
                    Field("deployment_id", .string, .optional, "Deployment id, when the input has one."),
                ]),
        ],
        enums: [
            EnumLayout(
                name: "PaywallPresentationSnapshotV1_1.Provider", doc: "Who serves a v1.1 paywall.",
                schemaPath: ["properties", "paywall", "properties", "provider"])
        ],
        reused: [
            "PaywallPresentationSnapshot.Status", "PaywallPresentationSnapshot.Surface", "PaywallPresentationSnapshot.OnboardingRun",
            "PaywallPresentationSnapshot.Outcome", "PaywallPresentationSnapshot.Context", "PaywallPresentationSnapshot.RenderMode",
            "PaywallPresentationSnapshot.Billing",
        ]
    )

    /// The top level, in the tracker's emission order (<doc:PaywallPresentationContract#Emission-order>).
    static func paywallRoot(prefix: String, nested: String, schemaVersion: SchemaVersionRule, doc: String) -> StructLayout {
        StructLayout(
            name: prefix, doc: doc, schemaPath: [],
            fields: [
                Field("presentation_id", .string, .required, "Lowercase UUIDv7 minted at start."),
                Field("seq", .int, .required, "1 for the first send, then +1 per send."),
                Field("started_at", .string, .required, "When the paywall was resolved for display."),
                Field("shown_at", .string, .nullable, "When the host confirmed it on screen; `null` until then."),
                Field("sent_at", .string, .required, "Device clock when the snapshot was built (clamped)."),
                Field("paywall", .structure("\(prefix).Paywall"), .required, "The paywall."),
                Field("surface", .enumeration("\(nested).Surface"), .required, "Where it was presented."),
                Field(
                    "onboarding_run", .structure("\(nested).OnboardingRun"), .optional,
                    "The onboarding step, only with surface `paywall_step`."),
                Field("context", .structure("\(nested).Context"), .required, "Device and app context, fixed at start."),
                Field("status", .enumeration("\(nested).Status"), .required, "Presentation status."),
                Field("ended_at", .string, .nullable, "End time; `null` until ended."),
                Field("outcome", .structure("\(nested).Outcome"), .nullable, "The outcome; `null` until ended."),
            ],
            schemaVersion: schemaVersion)
    }

    static func paywallCommonStructs(prefix p: String, schemaVersion: SchemaVersionRule) -> [StructLayout] {
        [
            paywallRoot(
                prefix: p, nested: p, schemaVersion: schemaVersion,
                doc:
                    "One send of a paywall presentation, contract v1 (<doc:PaywallPresentationContract>), keys in the tracker's order (<doc:PaywallPresentationContract#Emission-order>)."
            ),
            StructLayout(
                name: "\(p).OnboardingRun",
                doc: "The onboarding run and step that showed the paywall (<doc:PaywallPresentationContract#Onboarding-run>).",
                schemaPath: ["properties", "onboarding_run"],
                fields: [
                    Field("run_id", .string, .required, "The run's id."),
                    Field("step_key", .string, .required, "The paywall step's key."),
                ]),
            StructLayout(
                name: "\(p).Outcome", doc: "How the presentation ended (<doc:PaywallPresentationContract#Outcome-and-transaction>).",
                schemaPath: ["properties", "outcome", "anyOf", "1"],
                fields: [
                    Field("status", .enumeration("\(p).OutcomeStatus"), .required, "The outcome."),
                    Field("reason", .string, .optional, "Host error reason, only with `error`."),
                    Field("transaction", .structure("\(p).Transaction"), .optional, "Store transaction, only with `purchased`."),
                ]),
            StructLayout(
                name: "\(p).Transaction",
                doc: "Store transaction keys of a purchase (<doc:PaywallPresentationContract#Outcome-and-transaction>); never empty.",
                schemaPath: ["properties", "outcome", "anyOf", "1", "properties", "transaction"],
                fields: [
                    Field("original_transaction_identifier", .string, .optional, "StoreKit original transaction id, or the Play order id."),
                    Field("purchase_token", .string, .optional, "Play purchase token."),
                    Field("product_id", .string, .optional, "Store product id."),
                    Field("restored", .bool, .optional, "`true` for a restore; the tracker never writes `false`."),
                ]),
            StructLayout(
                name: "\(p).Context",
                doc: "Device and app context (<doc:PaywallPresentationContract#Context>); `build` and `os_version` are always written.",
                schemaPath: ["properties", "context"],
                fields: [
                    Field("app_version", .string, .required, "Marketing version."),
                    Field("build", .string, .nullable, "Build number, `null` when unknown."),
                    Field("platform", .enumeration("\(p).Platform"), .required, "Platform."),
                    Field("os_version", .string, .nullable, "OS version, `null` when unknown."),
                    Field("locale", .string, .required, "BCP 47 language tag."),
                    Field("timezone", .string, .required, "IANA time zone name."),
                    Field("library_version", .string, .optional, "Version of the tracker library."),
                ]),
        ]
    }

    static func paywallCommonEnums(prefix p: String) -> [EnumLayout] {
        [
            EnumLayout(name: "\(p).Status", doc: "Presentation status.", schemaPath: ["properties", "status"]),
            EnumLayout(name: "\(p).Surface", doc: "Where the paywall was presented.", schemaPath: ["properties", "surface"]),
            EnumLayout(
                name: "\(p).OutcomeStatus", doc: "How a presentation ended.",
                schemaPath: ["properties", "outcome", "anyOf", "1", "properties", "status"]),
            EnumLayout(
                name: "\(p).Platform", doc: "Platform of the device.", schemaPath: ["properties", "context", "properties", "platform"]),
        ]
    }
}
