package storetest_test

import (
	"context"
	"testing"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/storetest"
	"github.com/lasso-mail/lasso/internal/testdb"
)

func TestConformance(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) db.DB {
				d, err := db.Open(context.Background(), testdb.URL(t, dialect))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				if err := app.Migrate(context.Background(), d); err != nil {
					t.Fatal(err)
				}
				return d
			})
		})
	}
}
