package wire

import "testing"

// Who may send what: pausing maintenance and setting the routed-request
// load generator are an operator's alone; the client API is anyone's; the
// messages nodes exchange, the handshake's included, are nodes' only.
func TestRoleOf(t *testing.T) {
	for _, tc := range []struct {
		types []Type
		want  Role
	}{
		{[]Type{TypeMaintControl, TypeCCFlood, TypeTapBench}, RoleOperator},
		{[]Type{TypePing, TypeGetRingInfo, TypeClientLookup, TypeStatBlock, TypeClientPut,
			TypeClientGet, TypeClientStat, TypeClientPutBatch, TypeGetMaintStatus,
			TypeD2Put, TypeD2Get, TypeD2Delete, TypeD2Latest, TypeD2Stat}, RoleClient},
		{[]Type{TypeChallenge, TypeProof, TypeCCRequest, TypeCCAck, TypeLookup, TypeStoreBlock,
			TypeTreeQuery, TypeAudit, TypeAck, TypeError, TypeD2Store, TypeD2Drop, TypeD2Join}, RoleNode},
	} {
		for _, typ := range tc.types {
			if got := RoleOf(typ); got != tc.want {
				t.Errorf("RoleOf(%v) = %d, want %d", typ, got, tc.want)
			}
		}
	}
}

// Only the requests answered with a block (or a fetched object) have a big reply: a driver
// holds a block's room for those and little for the rest.
func TestBigReply(t *testing.T) {
	for _, ti := range types {
		want := ti.typ == TypeFetchBlock || ti.typ == TypeClientGet || ti.typ == TypeTapLocate ||
			ti.typ == TypeD2Fetch || ti.typ == TypeD2Get
		if got := BigReply(ti.typ); got != want {
			t.Errorf("BigReply(%s) = %v, want %v", ti.name, got, want)
		}
	}
	if BigReply(Type(999)) {
		t.Error("an unknown type has a big reply")
	}
}
