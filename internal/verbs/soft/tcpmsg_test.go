package soft

import (
	"testing"
)

// TestTCPMessagesShared runs the message-mode tests that use only the verbs
// interface over TCP links (PTL_SOFT_PATH=tcp): every queue pair of msgPair
// connects over a TCP stream.
func TestTCPMessagesShared(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"MixedWithWorkRequests", TestMessagesMixedWithWorkRequests},
		{"Disabled", TestMessagesDisabled},
		{"EnableAfterConnect", TestEnableMessagesAfterConnect},
		{"WaitWakes", TestMessagesWaitWakes},
		{"HandlerDeregisters", TestMessageHandlerDeregisters},
		{"BeforePeerClose", TestMessagesBeforePeerClose},
		{"FairAcrossQueuePairs", TestMessagesFairAcrossQueuePairs},
		{"PollRacesFailingPost", TestMessagesPollRacesFailingPost},
		{"PollRoundLocksOnce", TestPollRoundLocksOnce},
		{"PollRoundMixed", TestPollRoundMixed},
		{"PollRoundHandsOut", TestPollRoundHandsOutWhatItsRoundFound},
		{"PollRoundNoStaleReady", TestPollRoundLeavesNoStaleReady},
		{"PollRoundReceiveBeforeLaterMessage", TestPollRoundReceiveBeforeLaterMessage},
		{"PollRoundAllocatesNothing", TestPollRoundAllocatesNothing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvPath, "tcp")
			tc.f(t)
		})
	}
}
