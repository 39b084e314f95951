package dashboard

// HashPassword is exported to tests that create users directly.
var HashPassword = hashPassword
