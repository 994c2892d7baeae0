package pki

import (
	"context"
	"log/slog"
	"time"
)

// CRLCheckEvery is how often a daemon with a bundle reads its crl.pem
// again: a revocation copied into the bundle takes effect within it.
var CRLCheckEvery = 30 * time.Second

// WatchCRL reads b's CRL again every CRLCheckEvery until ctx ends, logs
// what it finds, and calls changed (if not nil) when the CRL revokes more
// than before. A daemon runs it in a goroutine of its own.
func WatchCRL(ctx context.Context, b *Bundle, log *slog.Logger, changed func()) {
	t := time.NewTicker(CRLCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch ok, err := b.ReloadCRL(); {
		case err != nil:
			log.Error("reading the CRL again; the one in use stays", "err", err)
		case ok:
			log.Info("read a new CRL: the certificates it revokes are refused from now on")
			if changed != nil {
				changed()
			}
		}
	}
}
