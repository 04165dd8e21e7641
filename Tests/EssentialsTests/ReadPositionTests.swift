import Essentials
import TestThreads
import Testing

@Suite(.ownThreads) struct ReadPositionTests {
    @Test func aPositionReadsBackAsPostgreSQLWritesIt() {
        for (text, value) in [("0/0", UInt64(0)), ("0/16B3748", 0x16B_3748), ("16/B374D848", 0x16_B374_D848), ("FFFFFFFF/FFFFFFFF", .max)] {
            #expect(ReadPosition.parse(text) == value, "\(text)")
            #expect(ReadPosition.text(value) == text)
        }
        for bad in ["", "0", "/1", "1/", "0/+1", "0/-1", "g/0", "123456789/0", "0/1/2", "0 /1", "yesterday"] {
            #expect(ReadPosition.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func theHandedBackPositionIsTheNewestSeen() {
        let position = ReadPosition(required: 100, mayUseReplica: true)
        #expect(position.position == 100, "what the client had, when nothing newer was seen")
        position.note(50)
        #expect(position.position == 100)
        position.note(300)
        position.note(200)
        #expect(position.position == 300)
    }
}
