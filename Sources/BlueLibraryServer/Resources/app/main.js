// BlueLibrary web app: the entry module (wires the request model, the event stream and the view).
