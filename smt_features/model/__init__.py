"""The model room: features of the log-linear model, the one weights model, moses.ini, KenLM queries."""
