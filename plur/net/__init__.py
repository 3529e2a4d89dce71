"""The local network doors' foundation, shared by the service and the web page.

* :mod:`~plur.net.addresses`: loopback binding and the unix socket
* :mod:`~plur.net.bodylimit`: request bodies capped as they stream in
* :mod:`~plur.net.logincode`: one-time login codes for the browser
* :mod:`~plur.net.browser`: the login page handed to a browser
"""
