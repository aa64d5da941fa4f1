// The classic listener leak: every tick adds a listener to one long-lived emitter, a closure
// over a fresh array of 2,000 small objects, and never removes it.  Everything it keeps is on
// V8's own heap.  Prints the listeners' count (300) when done.
'use strict';
const { EventEmitter } = require('events');
const bus = new EventEmitter();
bus.setMaxListeners(0);
let ticks = 0;
const timer = setInterval(() => {
    const rows = [];
    for (let i = 0; i < 2000; i++)
        rows.push({ id: ticks * 2000 + i, name: 'row' + i });
    bus.on('update', () => rows.length);
    if (++ticks === 300) {
        clearInterval(timer);
        console.log(bus.listenerCount('update'));
    }
}, 10);
