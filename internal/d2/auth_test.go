package d2_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/d2/key"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/wire"
)

// writer is a volume's writer: its key pair, for signing grants.
type writer struct {
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey
}

func newWriter(r *rand.Rand) writer {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(r.Uint32())
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return writer{pub: priv.Public().(ed25519.PublicKey), priv: priv}
}

// in is k moved into the writer's volume: its first 20 bytes the volume ID.
func (w writer) in(k id.ID) id.ID {
	b := k.Bytes()
	v := key.VolumeOfKey(w.pub)
	copy(b, v[:])
	x, _ := id.FromBytes(b)
	return x
}

// auth is the writer's consent to op on k with data and prev, until
// expires.
func (w writer) auth(op key.Op, k id.ID, data, prev []byte, expires time.Time) wire.D2Auth {
	kk, _ := key.FromID(k)
	g := key.Grant{Op: op, Key: kk, Expires: expires.UnixNano()}
	if op != key.OpDelete {
		g.Sum = sha256.Sum256(data)
	}
	copy(g.Prev[:], prev)
	return wire.D2Auth{Pub: w.pub, Expires: uint64(g.Expires), Sig: g.Sign(w.priv)}
}

// now is the simulated clock, as the nodes see it.
func (c *cluster) now() time.Time { return c.s.Epoch().Add(c.s.Now()) }

// TestForgedDeletes (RELIABILITY E3): deletes and replacing puts of a
// stored block from a client without the volume writer's valid
// signature (none, another key's, another volume's key, expired, too
// far ahead, signed for another key, for other bytes or another op) are
// refused as bad requests, counted at the gateway, and every replica
// still holds the bytes; the writer's signed ones take effect.
func TestForgedDeletes(t *testing.T) {
	c := newCluster(t, 31, 10, still(), skewed)
	r := rand.New(rand.NewPCG(31, 31))
	w, mallory := newWriter(r), newWriter(r)
	b := randomBlock(r, w.in(skewed(r)))
	gw := c.gateways(b.key, 2)
	send := func(m wire.Msg) (*wire.D2StoreDone, error) {
		t.Helper()
		reply, err := c.send(gw[0], gw[1], m)
		if err != nil {
			return nil, err
		}
		s, ok := reply.(*wire.D2StoreDone)
		if !ok {
			t.Fatalf("%v answered with %T", m.Type(), reply)
		}
		return s, nil
	}
	if s, err := send(&wire.D2Put{Key: b.key, Data: b.data, Mode: wire.D2PutIfAbsent, Auth: w.auth(key.OpIfAbsent, b.key, b.data, nil, c.now().Add(time.Minute))}); err != nil || s.Copies != 3 {
		t.Fatalf("the writer's creating put: %+v, %v", s, err)
	}
	c.checkCopies(b.key, b.data)

	other := w.in(skewed(r))
	evil := randomBlock(r, b.key).data
	signed := func(op key.Op, k id.ID, data, prev []byte, ahead time.Duration) wire.D2Auth {
		return w.auth(op, k, data, prev, c.now().Add(ahead))
	}
	const soon = 5 * time.Minute
	forged := []struct {
		name string
		m    func() wire.Msg // made when sent: expiries are against the clock then
	}{
		{"delete, unsigned", func() wire.Msg { return &wire.D2Delete{Key: b.key} }},
		{"delete, signed by another key", func() wire.Msg {
			a := mallory.auth(key.OpDelete, b.key, nil, nil, c.now().Add(soon))
			a.Pub = w.pub
			return &wire.D2Delete{Key: b.key, Auth: a}
		}},
		{"delete, another volume's key", func() wire.Msg {
			return &wire.D2Delete{Key: b.key, Auth: mallory.auth(key.OpDelete, b.key, nil, nil, c.now().Add(soon))}
		}},
		{"delete, expired", func() wire.Msg {
			return &wire.D2Delete{Key: b.key, Auth: signed(key.OpDelete, b.key, nil, nil, -d2.GrantSkew-time.Second)}
		}},
		{"delete, expiring too far ahead", func() wire.Msg {
			return &wire.D2Delete{Key: b.key, Auth: signed(key.OpDelete, b.key, nil, nil, d2.MaxGrantAhead+time.Minute)}
		}},
		{"delete, signed for another key", func() wire.Msg {
			return &wire.D2Delete{Key: b.key, Auth: signed(key.OpDelete, other, nil, nil, soon)}
		}},
		{"delete, signed as a put", func() wire.Msg {
			return &wire.D2Delete{Key: b.key, Auth: signed(key.OpReplace, b.key, nil, nil, soon)}
		}},
		{"replace, unsigned", func() wire.Msg { return &wire.D2Put{Key: b.key, Data: evil, Mode: wire.D2PutReplace} }},
		{"replace, signed for other bytes", func() wire.Msg {
			return &wire.D2Put{Key: b.key, Data: evil, Mode: wire.D2PutReplace, Auth: signed(key.OpReplace, b.key, b.data, nil, soon)}
		}},
		{"replace, another volume's key", func() wire.Msg {
			return &wire.D2Put{Key: b.key, Data: evil, Mode: wire.D2PutReplace, Auth: mallory.auth(key.OpReplace, b.key, evil, nil, c.now().Add(soon))}
		}},
		{"if-hash, unsigned", func() wire.Msg {
			return &wire.D2Put{Key: b.key, Data: evil, Mode: wire.D2PutIfHash, Prev: d2.Sum(b.data)}
		}},
		{"if-hash, signed for another key", func() wire.Msg {
			return &wire.D2Put{Key: b.key, Data: evil, Mode: wire.D2PutIfHash, Prev: d2.Sum(b.data), Auth: signed(key.OpIfHash, other, evil, d2.Sum(b.data), soon)}
		}},
	}
	gateway := c.node(c.hosts[gw[1]])
	for _, f := range forged {
		before := gateway.Stats.Unauthorized
		if s, err := send(f.m()); code(err) != fault.CodeBadRequest {
			t.Errorf("%s: %+v, %v; want a bad request", f.name, s, err)
		}
		if gateway.Stats.Unauthorized != before+1 {
			t.Errorf("%s: not counted", f.name)
		}
		c.s.RunFor(time.Minute)
		c.checkCopies(b.key, b.data)
	}

	// The writer's own: a replace, then a delete.
	v2 := randomBlock(r, b.key).data
	if s, err := send(&wire.D2Put{Key: b.key, Data: v2, Mode: wire.D2PutIfHash, Prev: d2.Sum(b.data), Auth: signed(key.OpIfHash, b.key, v2, d2.Sum(b.data), soon)}); err != nil || s.Copies != 3 {
		t.Fatalf("the writer's if-hash put: %+v, %v", s, err)
	}
	c.checkCopies(b.key, v2)
	if s, err := send(&wire.D2Delete{Key: b.key, Auth: signed(key.OpDelete, b.key, nil, nil, soon)}); err != nil || s.Copies != 3 {
		t.Fatalf("the writer's delete: %+v, %v", s, err)
	}
	for _, a := range c.replicas(b.key) {
		if _, err := c.engines[a].Stat(b.key); err == nil {
			t.Errorf("%s still holds the block the writer deleted", a)
		}
	}
}

// TestForgedCreates (RELIABILITY E3): creating puts (keep, if absent) of
// a new key under a volume, unsigned or signed by another key, are
// refused as bad requests and counted at the gateway, and no node stores
// the key (a forged newer superblock or a squatted lease cannot land);
// the writer's signed one lands. A registry key takes an unsigned put if
// absent of a name record that verifies under its name's key, nothing
// else; a replace, a keep put or a delete of it is refused, and the
// record stays.
func TestForgedCreates(t *testing.T) {
	c := newCluster(t, 32, 10, still(), skewed)
	r := rand.New(rand.NewPCG(32, 32))
	w, mallory := newWriter(r), newWriter(r)
	b := randomBlock(r, w.in(skewed(r)))
	gw := c.gateways(b.key, 2)
	gateway := c.node(c.hosts[gw[1]])
	send := func(m wire.Msg) (wire.Msg, error) { return c.send(gw[0], gw[1], m) }
	soon := func() time.Time { return c.now().Add(5 * time.Minute) }
	held := func(k id.ID) []string {
		var at []string
		for _, h := range c.hosts {
			if _, err := c.engines[h.Addr].Stat(k); err == nil {
				at = append(at, h.Addr)
			}
		}
		return at
	}
	refuse := func(name string, m wire.Msg) {
		t.Helper()
		before := gateway.Stats.Unauthorized
		if reply, err := send(m); code(err) != fault.CodeBadRequest {
			t.Errorf("%s: %+v, %v; want a bad request", name, reply, err)
		}
		if gateway.Stats.Unauthorized != before+1 {
			t.Errorf("%s: not counted", name)
		}
		c.s.RunFor(time.Minute)
	}
	refuse("keep, unsigned", &wire.D2Put{Key: b.key, Data: b.data, Mode: wire.D2PutKeep})
	refuse("if-absent, unsigned", &wire.D2Put{Key: b.key, Data: b.data, Mode: wire.D2PutIfAbsent})
	refuse("if-absent, another volume's key", &wire.D2Put{Key: b.key, Data: b.data, Mode: wire.D2PutIfAbsent,
		Auth: mallory.auth(key.OpIfAbsent, b.key, b.data, nil, soon())})
	refuse("keep, signed as if-absent", &wire.D2Put{Key: b.key, Data: b.data, Mode: wire.D2PutKeep,
		Auth: w.auth(key.OpIfAbsent, b.key, b.data, nil, soon())})
	if at := held(b.key); len(at) != 0 {
		t.Fatalf("refused creating puts stored the key on %v", at)
	}
	if reply, err := send(&wire.D2Put{Key: b.key, Data: b.data, Mode: wire.D2PutKeep, Auth: w.auth(key.OpKeep, b.key, b.data, nil, soon())}); err != nil || reply.(*wire.D2StoreDone).Copies != 3 {
		t.Fatalf("the writer's keep put: %+v, %v", reply, err)
	}
	c.checkCopies(b.key, b.data)

	// The registry: an unsigned put if absent only, of a name record that
	// verifies, under its name's key.
	rk := key.RegistryKey("home").ID()
	rec, err := key.SignName("home", w.priv)
	if err != nil {
		t.Fatal(err)
	}
	evil, err := key.SignName("home", mallory.priv)
	if err != nil {
		t.Fatal(err)
	}
	other, err := key.SignName("work", w.priv)
	if err != nil {
		t.Fatal(err)
	}
	forged := slices.Clone(rec)
	forged[len(forged)-2] ^= 1 // the signature's last hex digit
	junkKey := key.RegistryKey("junk").ID()
	refuse("registry if-absent of other bytes", &wire.D2Put{Key: junkKey, Data: b.data, Mode: wire.D2PutIfAbsent})
	refuse("registry if-absent of another name's record", &wire.D2Put{Key: rk, Data: other, Mode: wire.D2PutIfAbsent})
	refuse("registry if-absent of a record with a bad signature", &wire.D2Put{Key: rk, Data: forged, Mode: wire.D2PutIfAbsent})
	if at := append(held(rk), held(junkKey)...); len(at) != 0 {
		t.Fatalf("refused registry puts stored a record on %v", at)
	}
	before := gateway.Stats.Unauthorized
	if reply, err := send(&wire.D2Put{Key: rk, Data: rec, Mode: wire.D2PutIfAbsent}); err != nil || reply.(*wire.D2StoreDone).Copies != 3 {
		t.Fatalf("an unsigned registry put if absent: %+v, %v", reply, err)
	}
	if gateway.Stats.Unauthorized != before {
		t.Error("the registry put was counted as unauthorized")
	}
	refuse("registry replace", &wire.D2Put{Key: rk, Data: evil, Mode: wire.D2PutReplace})
	refuse("registry keep", &wire.D2Put{Key: rk, Data: evil, Mode: wire.D2PutKeep})
	refuse("registry if-hash", &wire.D2Put{Key: rk, Data: evil, Mode: wire.D2PutIfHash, Prev: d2.Sum(rec)})
	refuse("registry delete", &wire.D2Delete{Key: rk})
	c.checkCopies(rk, rec)
}

// TestPlacedWrites: a volume under block placement stores a block at
// key.PlaceBlock of its key, the request carrying the key the writer
// signed; the gateway takes it only when the request's key is that key's
// placement and the signature holds, and never for a registry key.
func TestPlacedWrites(t *testing.T) {
	c := newCluster(t, 16, 10, still(), skewed)
	r := rand.New(rand.NewPCG(32, 33))
	w, mallory := newWriter(r), newWriter(r)
	b := randomBlock(r, w.in(skewed(r)))
	signed, _ := key.FromID(b.key)
	placed := key.PlaceBlock(signed).ID()
	gw := c.gateways(placed, 2)
	gateway := c.node(c.hosts[gw[1]])
	soon := c.now().Add(5 * time.Minute)
	placedAuth := func(w writer, op key.Op, data []byte) wire.D2Auth {
		a := w.auth(op, b.key, data, nil, soon)
		a.Signed = signed[:]
		return a
	}
	other := signed.WithBlock(signed.Block()+1, signed.Version())
	rk := key.RegistryKey("home")
	rec, err := key.SignName("home", w.priv)
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*wire.D2Put{
		"at the signed key itself":          {Key: b.key, Data: b.data, Mode: wire.D2PutKeep, Auth: placedAuth(w, key.OpKeep, b.data)},
		"at another key's placement":        {Key: key.PlaceBlock(other).ID(), Data: b.data, Mode: wire.D2PutKeep, Auth: placedAuth(w, key.OpKeep, b.data)},
		"signed by another volume's writer": {Key: placed, Data: b.data, Mode: wire.D2PutKeep, Auth: placedAuth(mallory, key.OpKeep, b.data)},
		"other bytes":                       {Key: placed, Data: []byte("other"), Mode: wire.D2PutKeep, Auth: placedAuth(w, key.OpKeep, b.data)},
		"a registry record, placed":         {Key: key.PlaceBlock(rk).ID(), Data: rec, Mode: wire.D2PutIfAbsent, Auth: wire.D2Auth{Signed: rk[:]}},
	} {
		before := gateway.Stats.Unauthorized
		if reply, err := c.send(gw[0], gw[1], m); code(err) != fault.CodeBadRequest {
			t.Errorf("%s: %+v, %v; want a bad request", name, reply, err)
		}
		if gateway.Stats.Unauthorized != before+1 {
			t.Errorf("%s: not counted", name)
		}
	}
	c.s.RunFor(time.Minute)
	for _, h := range c.hosts {
		if n := c.engines[h.Addr].Stats().Objects; n != 0 {
			t.Fatalf("refused placed puts left %d objects on %s", n, h.Addr)
		}
	}
	m := &wire.D2Put{Key: placed, Data: b.data, Mode: wire.D2PutKeep, Auth: placedAuth(w, key.OpKeep, b.data)}
	if reply, err := c.send(gw[0], gw[1], m); err != nil || reply.(*wire.D2StoreDone).Copies != 3 {
		t.Fatalf("the writer's placed put: %+v, %v", reply, err)
	}
	c.checkCopies(placed, b.data)
	del := &wire.D2Delete{Key: placed, Auth: placedAuth(w, key.OpDelete, nil)}
	if _, err := c.send(gw[0], gw[1], del); err != nil {
		t.Fatalf("the writer's placed delete: %v", err)
	}
}
