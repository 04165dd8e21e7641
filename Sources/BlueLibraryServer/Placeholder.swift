import HTTPServer
