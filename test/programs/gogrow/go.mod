module gogrow

go 1.19
