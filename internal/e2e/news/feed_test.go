package news_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// TestFeedOutlivesItsDial: a feed's session lasts past the dial's
// deadline. A server that stops reading for a while (as a news server
// does while its replies wait on the DHT) holds the feeder's writes
// longer than the dial's timeout; the feed must go on writing then, not
// leave the server waiting for the rest of an article and itself for the
// replies (a TestSiteStoppedCatchesUp failure: "850 of 1000
// articles answered" after 3 minutes).
func TestFeedOutlivesItsDial(t *testing.T) {
	defer func(d time.Duration) { feedDialTimeout = d }(feedDialTimeout)
	feedDialTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r, w := bufio.NewReader(c), bufio.NewWriter(c)
		w.WriteString("200 a slow reader\r\n")
		w.Flush()
		for n := 0; ; {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			switch f := strings.Fields(line); {
			case len(f) == 2 && f[0] == "MODE":
				w.WriteString("203 streaming\r\n")
			case len(f) == 2 && f[0] == "TAKETHIS":
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if l == ".\r\n" {
						break
					}
				}
				if n++; n == 1 {
					time.Sleep(time.Second) // past the dial's timeout, with writes held
				}
				w.WriteString("239 " + f[1] + "\r\n")
			}
			w.Flush()
		}
	}()
	// 24 MB: more than the socket buffers hold, so writes wait for the
	// server, past the dial's timeout.
	arts := fedArticles{text: map[string]string{}}
	for i := range 384 {
		id := fmt.Sprintf("<slow%d@e2e.test>", i)
		arts.IDs = append(arts.IDs, id)
		arts.text[id] = "Message-ID: " + id + "\r\n\r\n" + strings.Repeat(strings.Repeat("x", 1000)+"\r\n", 64)
	}
	out := feed(t, ln.Addr().String(), arts, time.Now().Add(10*time.Second), nil)
	if len(out.acked) != len(arts.IDs) {
		t.Fatalf("%d of %d articles acknowledged in %d rounds", len(out.acked), len(arts.IDs), out.rounds)
	}
}
