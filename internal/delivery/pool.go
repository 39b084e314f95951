package delivery

import (
	"context"
	"sync"
	"time"
)

// pool keeps idle SMTP sessions per key (MX host or relay address) for a
// short time so consecutive messages to the same destination skip the
// connect, greeting, EHLO, STARTTLS and AUTH round trips.
type pool struct {
	maxIdle     int           // per key
	idleTimeout time.Duration // an idle session is QUIT after this
	maxUses     int           // transactions per session before QUIT

	mu     sync.Mutex
	idle   map[string][]*conn
	closed bool

	// wg tracks QUIT goroutines and pending idle timers so close can wait
	// for them.
	wg sync.WaitGroup
}

func newPool(maxIdle int, idleTimeout time.Duration, maxUses int) *pool {
	return &pool{maxIdle: maxIdle, idleTimeout: idleTimeout, maxUses: maxUses, idle: map[string][]*conn{}}
}

// get returns the most recently used idle session for key, or nil.
func (p *pool) get(key string) *conn {
	p.mu.Lock()
	l := p.idle[key]
	if len(l) == 0 {
		p.mu.Unlock()
		return nil
	}
	c := l[len(l)-1]
	l[len(l)-1] = nil
	if len(l) == 1 {
		delete(p.idle, key)
	} else {
		p.idle[key] = l[:len(l)-1]
	}
	p.mu.Unlock()
	if c.idleTimer.Stop() {
		p.wg.Done() // the timer will not run expire
	}
	return c
}

// put parks a session that just finished a transaction, or QUITs it when the
// pool is full, closed, disabled or the session is used up.
func (p *pool) put(c *conn) {
	p.mu.Lock()
	if p.closed || p.maxIdle <= 0 || c.uses >= p.maxUses || len(p.idle[c.key]) >= p.maxIdle {
		p.wg.Add(1)
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			c.quit()
		}()
		return
	}
	p.idle[c.key] = append(p.idle[c.key], c)
	p.wg.Add(1)
	c.idleTimer = time.AfterFunc(p.idleTimeout, func() {
		defer p.wg.Done()
		p.expire(c)
	})
	p.mu.Unlock()
}

// expire QUITs c if it is still idle. get removes a session from the pool
// under the lock before using it, so a session is never both used and expired.
func (p *pool) expire(c *conn) {
	p.mu.Lock()
	l := p.idle[c.key]
	found := false
	for i, x := range l {
		if x == c {
			l = append(l[:i], l[i+1:]...)
			found = true
			break
		}
	}
	if found {
		if len(l) == 0 {
			delete(p.idle, c.key)
		} else {
			p.idle[c.key] = l
		}
	}
	p.mu.Unlock()
	if found {
		c.quit()
	}
}

// close QUITs every idle session; later puts QUIT immediately.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	var all []*conn
	for k, l := range p.idle {
		all = append(all, l...)
		delete(p.idle, k)
	}
	p.mu.Unlock()
	for _, c := range all {
		if c.idleTimer.Stop() {
			p.wg.Done()
		}
		p.wg.Go(c.quit)
	}
	p.wg.Wait()
}

// idleCount reports the number of idle sessions (for tests).
func (p *pool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.idle {
		n += len(l)
	}
	return n
}

// limiter bounds concurrent deliveries per key (recipient domain). Keys
// without waiters or holders are forgotten, so the map does not grow with
// every domain ever seen.
type limiter struct {
	n  int
	mu sync.Mutex
	m  map[string]*slot
}

type slot struct {
	ch   chan struct{}
	refs int
}

func newLimiter(n int) *limiter {
	return &limiter{n: n, m: map[string]*slot{}}
}

// acquire waits for a free slot for key. The returned release must be called
// exactly once.
func (l *limiter) acquire(ctx context.Context, key string) (release func(), err error) {
	l.mu.Lock()
	s := l.m[key]
	if s == nil {
		s = &slot{ch: make(chan struct{}, l.n)}
		l.m[key] = s
	}
	s.refs++
	l.mu.Unlock()

	unref := func() {
		l.mu.Lock()
		s.refs--
		if s.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch; unref() }, nil
	case <-ctx.Done():
		unref()
		return nil, ctx.Err()
	}
}
