import RocalyticsClient
import Testing
import TrackerCore
import TrackerCoreTestKit

/// `COMPLETED` of rocalytics-client.md §18 E.
let COMPLETED_TEXT =
    #"{"schema_version":1,"run_id":"0190a8c4-4b2e-7c1a-9f3d-2e5b6c7d8e9f","seq":4,"status":"completed","started_at":"2026-01-10T08:00:00.000Z","sent_at":"2026-01-10T08:00:40.000Z","completed_at":"2026-01-10T08:00:40.000Z","onboarding":{"key":"main","version":"3","variant_key":"short-intro"},"studio":{"onboarding_id":"onb_123","deployment_id":"dep_789","audience_id":null},"context":{"app_version":"2.4.0","build":"412","platform":"ios","os_version":"18.1","locale":"en-US","timezone":"Europe/Paris","library_version":"0.1.0"},"manifest":{"steps":[{"step_key":"welcome"},{"step_key":"goal"},{"step_key":"interests"},{"step_key":"minutes"},{"step_key":"done"}]},"properties":{"signup_source":"email"},"steps":[{"step_key":"welcome","entered_at":"2026-01-10T08:00:00.000Z","exited_at":"2026-01-10T08:00:10.000Z","answers":[]},{"step_key":"goal","entered_at":"2026-01-10T08:00:10.000Z","exited_at":"2026-01-10T08:00:20.000Z","answers":[{"question_key":"goal","kind":"single","value":"lose_weight"}]},{"step_key":"interests","entered_at":"2026-01-10T08:00:20.000Z","exited_at":"2026-01-10T08:00:25.000Z","answers":[{"question_key":"interests","kind":"multi","value":["yoga","running"]},{"question_key":"note","kind":"text","value":"knees"}]},{"step_key":"minutes","entered_at":"2026-01-10T08:00:25.000Z","exited_at":"2026-01-10T08:00:30.000Z","answers":[{"question_key":"daily_minutes","kind":"numeric","value":15,"unit":"minute"}]},{"step_key":"done","entered_at":"2026-01-10T08:00:30.000Z","exited_at":"2026-01-10T08:00:40.000Z","answers":[]}]}"#

let RUN1 = "0190a8c4-4b2e-7c1a-9f3d-2e5b6c7d8e9f"
let RUN2 = "0190a8c5-0000-7000-8000-000000000002"

func completedObject() -> JSONObject { obj(COMPLETED_TEXT) }

/// `IN_PROGRESS`: COMPLETED without studio and properties, in progress, truncated, one open entry.
func inProgressObject() -> JSONObject {
    var o = completedObject()
    o["studio"] = nil
    o["properties"] = nil
    o["onboarding"] = ["key": "main", "version": "3"]
    o["status"] = "in_progress"
    o["completed_at"] = .null
    o["truncated"] = true
    o["steps"] = json(#"[{"step_key":"welcome","entered_at":"2026-01-10T08:00:00.000Z","exited_at":null,"answers":[]}]"#)
    return o
}

/// The generated contract type, decoded from the JSON: what the onboarding tracker hands the sink.
func snapshot(_ o: JSONObject) -> OnboardingRunSnapshot {
    do { return try OnboardingRunSnapshot(json: .object(o)) } catch { fatalError("snapshot does not fit the contract: \(error)") }
}

let COMPLETED = snapshot(completedObject())
let IN_PROGRESS = snapshot(inProgressObject())

let E40_PAYLOAD =
    #"{"onboarding_metadata":{"onboardingId":"onb_123","deployment_id":"dep_789","locale":"en-US","onboarding_key":"main","onboarding_version":"3","variant_key":"short-intro","run_id":"0190a8c4-4b2e-7c1a-9f3d-2e5b6c7d8e9f","seq":4},"sent_at":"2026-01-10T08:00:40.004Z","responses":[{"step_id":"welcome","entered_at":"2026-01-10T08:00:00.000Z","exited_at":"2026-01-10T08:00:10.000Z","answers":{}},{"step_id":"goal","entered_at":"2026-01-10T08:00:10.000Z","exited_at":"2026-01-10T08:00:20.000Z","answers":{"goal":"lose_weight"}},{"step_id":"interests","entered_at":"2026-01-10T08:00:20.000Z","exited_at":"2026-01-10T08:00:25.000Z","answers":{"interests":["yoga","running"],"note":"knees"}},{"step_id":"minutes","entered_at":"2026-01-10T08:00:25.000Z","exited_at":"2026-01-10T08:00:30.000Z","answers":{"daily_minutes":15}},{"step_id":"done","entered_at":"2026-01-10T08:00:30.000Z","exited_at":"2026-01-10T08:00:40.000Z","answers":{}}]}"#

let F58_BODY =
    #"{"schema_version":1,"run_id":"0190a8c4-4b2e-7c1a-9f3d-2e5b6c7d8e9f","seq":4,"status":"in_progress","started_at":"2026-01-10T08:00:00.000Z","completed_at":null,"sent_at":"2026-01-10T08:00:00.004Z","onboarding":{"key":"main","version":"3"},"context":{"app_version":"2.4.0","build":"412","platform":"ios","os_version":"18.1","locale":"en-US","timezone":"Europe/Paris","library_version":"0.1.0"},"manifest":{"steps":[{"step_key":"welcome"},{"step_key":"goal"},{"step_key":"interests"},{"step_key":"minutes"},{"step_key":"done"}]},"truncated":true,"steps":[{"step_key":"welcome","entered_at":"2026-01-10T08:00:00.000Z","exited_at":null,"answers":[]}],"responses":[{"step_id":"welcome","entered_at":"2026-01-10T08:00:00.000Z","exited_at":null,"answers":{}}],"onboarding_metadata":{"onboarding_id":"main","locale":"en-US","onboarding_key":"main","onboarding_version":"3","run_id":"0190a8c4-4b2e-7c1a-9f3d-2e5b6c7d8e9f","seq":4}}"#

/// Records every onboarding body in `requests`, with the pre-v1 keys stripped, for
/// `make validate-payloads` (onboarding-run v1 schema). Returns the stripped snapshots.
@discardableResult
func captureOnboardingBodies(_ requests: [HTTPRequest]) -> [JSONObject] {
    var out: [JSONObject] = []
    for r in requests where r.url.hasSuffix("/functions/v1/onboarding-response") {
        guard let body = r.body, var o = (try? WireJSON.decode(body))?.objectValue, o["schema_version"] != nil else { continue }
        o["responses"] = nil
        o["onboarding_metadata"] = nil
        PayloadCapture.record(WireJSON.encode(.object(o)), schema: .onboardingRunV1)
        #expect(ContractChecker.onboardingRun(.object(o)).isEmpty, "\(ContractChecker.onboardingRun(.object(o)))")
        #expect((try? OnboardingRunSnapshot(json: .object(o))) != nil)
        out.append(o)
    }
    return out
}
